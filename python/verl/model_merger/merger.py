"""verl's model merger for verl-cpp's checkpoints.

verl's FSDP trainer saves each rank's parameter shard (``model_world_size_N_rank_r.pt``) and ``python -m
verl.model_merger merge`` stitches them into a Hugging Face checkpoint. verl-cpp's trainers do the same over several
ranks: every rank writes ``model_world_size_N_rank_r.safetensors`` (its ZeRO-3 shard of the master weights; the
layout in its metadata) beside rank 0's config.json, and ``merge`` joins them (verl._C's
``load_sharded_pretrained``, the trainer's own layout code). A one-process checkpoint is already a Hugging Face
directory; ``merge`` then reads it through verl-cpp's checked loader. Either way every tensor name and shape is
checked against config.json, and the output is a clean Hugging Face directory -- weights, config.json,
generation_config.json and the tokenizer files -- without the optimizer state. A LoRA checkpoint's weights are already
the base with the adapters merged in (``W + alpha/r B A``, what PEFT's ``merge_and_unload`` gives); ``merge`` writes
them and, as verl's merger does, the adapter itself in PEFT's format as ``target_dir/lora_adapter/``. ``test`` compares a checkpoint with a reference Hugging Face
directory (``--test_hf_dir``), tensor by tensor, as verl's ``test`` operation does.

The arguments are verl 0.9.1's (verl/model_merger/base_model_merger.py). ``--backend megatron`` (verl-cpp writes no
Megatron checkpoints) and ``--hf_upload_path`` (no hub access) are errors that say so.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from dataclasses import dataclass
from typing import Optional

from ..errors import CheckpointError, ConfigError
from ..trainer.checkpointing import LORA_ADAPTER_DIR

# Files of a Hugging Face model directory that travel with the weights.
_SIDE_FILES = ("generation_config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
               "vocab.json", "merges.txt", "added_tokens.json", "chat_template.jinja", "chat_template.json")


@dataclass
class ModelMergerConfig:
    """verl's ModelMergerConfig fields that apply here."""

    operation: str  # "merge" or "test"
    backend: str
    local_dir: str
    target_dir: Optional[str] = "tmp"
    test_hf_dir: Optional[str] = None
    is_value_model: bool = False
    hf_upload_path: Optional[str] = None


def parse_args(argv: Optional[list[str]] = None) -> ModelMergerConfig:
    parser = argparse.ArgumentParser(prog="python -m verl.model_merger", description="verl model merger")
    sub = parser.add_subparsers(dest="operation", required=True, help="'merge' or 'test'")
    base = argparse.ArgumentParser(add_help=False)
    base.add_argument("--backend", type=str, required=True, choices=["fsdp", "megatron"])
    base.add_argument("--local_dir", type=str, required=True, help="the checkpoint's actor/ or critic/ directory")
    base.add_argument("--tie-word-embedding", action="store_true",
                      help="Megatron only in verl; here config.json's tie_word_embeddings decides")
    base.add_argument("--trust-remote-code", action="store_true", help="accepted; no remote code is ever run")
    base.add_argument("--is-value-model", action="store_true",
                      help="a critic checkpoint (AutoModelForTokenClassification, num_labels=1)")
    base.add_argument("--use_cpu_initialization", action="store_true", help="accepted; the merge runs on the CPU")
    merge_p = sub.add_parser("merge", parents=[base], help="write the checkpoint as a Hugging Face directory")
    merge_p.add_argument("--target_dir", default="tmp", type=str)
    merge_p.add_argument("--hf_upload_path", default=None, type=str)
    merge_p.add_argument("--private", action="store_true")
    test_p = sub.add_parser("test", parents=[base], help="compare the checkpoint with a Hugging Face directory")
    test_p.add_argument("--test_hf_dir", type=str, required=True)
    args = parser.parse_args(argv)
    return ModelMergerConfig(operation=args.operation, backend=args.backend, local_dir=args.local_dir,
                             target_dir=getattr(args, "target_dir", None),
                             test_hf_dir=getattr(args, "test_hf_dir", None), is_value_model=args.is_value_model,
                             hf_upload_path=getattr(args, "hf_upload_path", None))


def _check(config: ModelMergerConfig) -> None:
    if config.backend != "fsdp":
        raise ConfigError(f"--backend {config.backend}: verl-cpp writes no Megatron checkpoints; its checkpoints "
                          "merge with --backend fsdp")
    if config.hf_upload_path:
        raise ConfigError("--hf_upload_path: uploading to the Hugging Face hub is not supported (no hub access); "
                          "upload --target_dir yourself")
    if not os.path.isfile(os.path.join(config.local_dir, "config.json")):
        raise CheckpointError(f"{config.local_dir}: not a verl-cpp checkpoint model directory (no config.json); pass "
                              "global_step_N/actor or global_step_N/critic")


def _load(directory: str, value_head: bool):
    from .. import _C
    from ..models.checkpoint import load_model
    from ..models.transformer import CausalLM, ValueModel

    if _C.model.is_sharded_checkpoint(directory):
        module = _C.model.load_sharded_pretrained(directory, "auto", "cpu", value_head)
        return (ValueModel if value_head else CausalLM)._from_module(module)
    return load_model(directory, dtype="auto", value_head=value_head)


def merge(config: ModelMergerConfig) -> str:
    """Writes ``config.local_dir``'s model to ``config.target_dir`` as a Hugging Face checkpoint; returns it."""
    from ..models.checkpoint import save_pretrained

    _check(config)
    target = os.path.abspath(config.target_dir or "tmp")
    if os.path.abspath(config.local_dir) == target:
        raise ConfigError(f"--target_dir {config.target_dir} is the checkpoint directory itself")
    model = _load(config.local_dir, config.is_value_model)
    adapter = os.path.join(config.local_dir, LORA_ADAPTER_DIR)
    if os.path.isdir(adapter):
        # Read strictly (onto a throwaway copy) before anything is written: a damaged adapter is an error here, not
        # a surprise in PEFT later.
        _load(config.local_dir, config.is_value_model).load_adapter(adapter)
    save_pretrained(model, target)
    for name in _SIDE_FILES:
        src = os.path.join(config.local_dir, name)
        if os.path.isfile(src):
            shutil.copyfile(src, os.path.join(target, name))
    if os.path.isdir(adapter):
        shutil.copytree(adapter, os.path.join(target, LORA_ADAPTER_DIR), dirs_exist_ok=True)
    return target


def test(config: ModelMergerConfig) -> None:
    """Raises CheckpointError unless every tensor of the checkpoint equals the reference's (names, shapes, dtypes
    and values to float tolerance, as verl's test does with torch.testing.assert_close)."""
    import torch

    _check(config)
    mine = _load(config.local_dir, config.is_value_model).state_dict()
    ref = _load(config.test_hf_dir, config.is_value_model).state_dict()
    if set(mine) != set(ref):
        raise CheckpointError(f"tensor names differ: only in {config.local_dir}: {sorted(set(mine) - set(ref))[:10]}, "
                              f"only in {config.test_hf_dir}: {sorted(set(ref) - set(mine))[:10]}")
    for name, tensor in mine.items():
        try:
            torch.testing.assert_close(tensor, ref[name], rtol=1e-6, atol=1e-6)
        except AssertionError as e:
            raise CheckpointError(f"{name} differs from {config.test_hf_dir}: {e}") from None


def main(argv: Optional[list[str]] = None) -> int:
    config = parse_args(argv)
    try:
        if config.operation == "merge":
            print(f"verl.model_merger: wrote {merge(config)}")
        else:
            test(config)
            print(f"verl.model_merger: {config.local_dir} equals {config.test_hf_dir}")
    except (ConfigError, CheckpointError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0
