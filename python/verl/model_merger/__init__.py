"""verl's ``python -m verl.model_merger``: a training checkpoint's model directory (``global_step_N/actor`` or
``critic``) written out as a Hugging Face checkpoint. See :mod:`verl.model_merger.__main__`."""

from .merger import ModelMergerConfig, merge, parse_args, test

__all__ = ["ModelMergerConfig", "merge", "parse_args", "test"]
