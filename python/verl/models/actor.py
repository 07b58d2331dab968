"""The tutorials' ways to get the policy model: ``get_actor_model`` (a local Hugging Face checkpoint, loaded in the
transformers ``from_pretrained`` vocabulary) and ``HFActor`` (a loaded transformers model, copied into verl-cpp's
own decoder). Both give a ``CausalLM``, the module the trainer and the rollout engine run.

>>> actor = verl.models.get_actor_model(model_name="/models/Qwen2.5-0.5B-Instruct", device_map="auto",
...                                     torch_dtype=torch.bfloat16)
>>> actor = verl.models.HFActor(AutoModelForCausalLM.from_pretrained("/models/Qwen2.5-0.5B-Instruct"))

verl-cpp never downloads: a Hub name (``"Qwen/Qwen2.5-0.5B-Instruct"``) is found in the local Hugging Face cache
(``HF_HUB_CACHE``, ``HF_HOME/hub`` or ``~/.cache/huggingface/hub``) or is a ``verl.CheckpointError`` saying how to
download it first.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

import torch

from ..errors import CheckpointError, InvalidArgumentError
from .checkpoint import load_model
from .gguf_checkpoint import checkpoint_dir, is_gguf
from .transformer import CausalLM

__all__ = ["get_actor_model", "HFActor", "as_actor", "resolve_model_dir", "resolve_device", "resolve_dtype"]

_DTYPE_NAMES = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
                "float16": torch.float16, "fp16": torch.float16, "half": torch.float16, "float64": torch.float64}
_HUB_NAME = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")


def _hub_cache_dirs() -> list[str]:
    dirs = [os.environ.get("HF_HUB_CACHE")]
    if os.environ.get("HF_HOME"):
        dirs.append(os.path.join(os.environ["HF_HOME"], "hub"))
    dirs.append(os.path.join(os.path.expanduser("~"), ".cache", "huggingface", "hub"))
    return [d for d in dirs if d]


def _cached_snapshot(name: str) -> str | None:
    """The snapshot directory of Hub model ``name`` in a local Hugging Face cache (``refs/main``), or None."""
    for cache in _hub_cache_dirs():
        repo = os.path.join(cache, "models--" + name.replace("/", "--"))
        try:
            with open(os.path.join(repo, "refs", "main"), encoding="utf-8") as f:
                snapshot = os.path.join(repo, "snapshots", f.read().strip())
        except OSError:
            continue
        if os.path.isfile(os.path.join(snapshot, "config.json")):
            return snapshot
    return None


def resolve_model_dir(model_name: str | os.PathLike) -> str:
    """A local checkpoint directory for ``model_name``: the directory itself, a GGUF file's converted directory
    (``verl.models.gguf_checkpoint``), or a Hub name's snapshot in the local Hugging Face cache.
    ``verl.CheckpointError`` otherwise (verl-cpp does not download)."""
    if not isinstance(model_name, (str, os.PathLike)):
        raise InvalidArgumentError(f"model_name must be a checkpoint directory (str or path), got "
                                   f"{type(model_name).__name__}")
    path = os.path.expanduser(os.fspath(model_name))
    if is_gguf(path):
        return checkpoint_dir(path)
    if os.path.isdir(path):
        return path
    if _HUB_NAME.fullmatch(os.fspath(model_name)):
        snapshot = _cached_snapshot(os.fspath(model_name))
        if snapshot is not None:
            return snapshot
        raise CheckpointError(
            f"model {model_name!r} is not a local directory and not in the Hugging Face cache; verl-cpp does not "
            f"download models (no network access is assumed). Download it first, e.g. `huggingface-cli download "
            f"{model_name} --local-dir /models/{os.fspath(model_name).split('/')[-1]}`, and pass that directory")
    raise CheckpointError(f"model directory not found: {os.fspath(model_name)}")


def resolve_device(device_map: Any) -> str:
    """transformers' ``device_map`` as the one device verl-cpp places the model on: None -> cpu, ``"auto"`` -> cuda
    when available else cpu, a device string / ``torch.device`` / GPU index, or a dict mapping every module to the
    same device (``{"": 0}``). A model split across devices is an ``InvalidArgumentError``."""
    if device_map is None:
        return "cpu"
    if isinstance(device_map, Mapping):
        devices = {resolve_device(v) for v in device_map.values()}
        if len(devices) != 1:
            raise InvalidArgumentError(f"device_map {dict(device_map)!r}: verl-cpp keeps a model on one device "
                                       f"(got {sorted(devices)})")
        return devices.pop()
    if isinstance(device_map, bool):
        raise InvalidArgumentError(f"device_map must be a device, 'auto' or a dict, got {device_map!r}")
    if isinstance(device_map, int):
        return f"cuda:{device_map}"
    if device_map == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    try:
        return str(torch.device(device_map))
    except (RuntimeError, TypeError) as e:
        raise InvalidArgumentError(f"device_map {device_map!r} is not a device, 'auto' or a dict: {e}") from e


def resolve_dtype(torch_dtype: Any) -> torch.dtype | str:
    """transformers' ``torch_dtype``: None -> float32 (fp32 master weights, verl's ``fsdp_config.model_dtype``
    default), ``"auto"`` (the checkpoint's ``torch_dtype``), a ``torch.dtype`` or its name."""
    if torch_dtype is None:
        return torch.float32
    if isinstance(torch_dtype, torch.dtype):
        if torch_dtype not in _DTYPE_NAMES.values():
            raise InvalidArgumentError(f"torch_dtype {torch_dtype} is not supported (float32, bfloat16, float16)")
        return torch_dtype
    if torch_dtype == "auto":
        return "auto"
    if isinstance(torch_dtype, str) and torch_dtype.removeprefix("torch.") in _DTYPE_NAMES:
        return _DTYPE_NAMES[torch_dtype.removeprefix("torch.")]
    raise InvalidArgumentError(f"torch_dtype {torch_dtype!r} is not one of 'auto', {sorted(_DTYPE_NAMES)} or a "
                               "torch.dtype")


def get_actor_model(model_name: str | os.PathLike, device_map: Any = None, torch_dtype: Any = None,
                    **kwargs: Any) -> CausalLM:
    """The policy model in the checkpoint ``model_name`` (a local directory, or a Hub name already in the local
    cache), on ``device_map``'s device in ``torch_dtype`` (see ``resolve_device`` / ``resolve_dtype``).

    ``trust_remote_code`` and ``attn_implementation`` are accepted for transformers compatibility and do not change
    anything (the decoder is verl-cpp's own); any other keyword is an ``InvalidArgumentError``. Raises
    ``verl.CheckpointError`` for a missing or unreadable checkpoint and ``verl.ConfigError`` for an architecture
    other than Qwen2 / Qwen3 / Llama / Mistral / Phi-3."""
    unknown = sorted(set(kwargs) - {"trust_remote_code", "attn_implementation"})
    if unknown:
        raise InvalidArgumentError(f"get_actor_model: unexpected keyword argument(s) {unknown}")
    path = resolve_model_dir(model_name)
    model = load_model(path, dtype=resolve_dtype(torch_dtype), device=resolve_device(device_map))
    model.name_or_path = path
    return model


def _is_transformers_model(model: Any) -> bool:
    return hasattr(model, "state_dict") and hasattr(getattr(model, "config", None), "model_type")


class HFActor(CausalLM):
    """A transformers ``PreTrainedModel`` (``Qwen2ForCausalLM``, ``Qwen3ForCausalLM``, ``LlamaForCausalLM``,
    ``MistralForCausalLM``, ``Phi3ForCausalLM``) as
    verl-cpp's decoder: the same config and a copy of its weights, on the model's device and in its dtype (or
    ``device`` / ``dtype``). Later changes to either model do not reach the other.

    Raises ``InvalidArgumentError`` for an object that is not a transformers model and ``verl.ConfigError`` (from
    the config parser) for an architecture verl-cpp does not implement."""

    def __init__(self, hf_model: Any, *, device: str | torch.device | None = None,
                 dtype: torch.dtype | None = None) -> None:
        if not _is_transformers_model(hf_model):
            raise InvalidArgumentError(f"HFActor needs a transformers PreTrainedModel (Qwen2 / Qwen3 / Llama / "
                                       f"Mistral / Phi-3 *ForCausalLM), got {type(hf_model).__name__}")
        super().__init__(hf_model.config)
        first = next(iter(hf_model.parameters()), None)
        device = device if device is not None else (first.device if first is not None else None)
        dtype = dtype if dtype is not None else (first.dtype if first is not None else None)
        self.to(device, dtype)
        with torch.no_grad():
            self.load_state_dict({k: v.detach() for k, v in hf_model.state_dict().items()})
        name = getattr(hf_model, "name_or_path", None) or getattr(hf_model.config, "_name_or_path", None)
        self.name_or_path = name if name and os.path.isdir(os.path.expanduser(str(name))) else None


def as_actor(model: Any) -> CausalLM:
    """The policy as a ``CausalLM``: a ``CausalLM`` as is, a transformers model through ``HFActor``, a checkpoint
    directory through ``get_actor_model``."""
    if isinstance(model, CausalLM):
        return model
    if isinstance(model, (str, os.PathLike)):
        return get_actor_model(model)
    if _is_transformers_model(model):
        return HFActor(model)
    raise InvalidArgumentError(f"actor must be a verl.models CausalLM, a transformers model or a checkpoint "
                               f"directory, got {type(model).__name__}")
