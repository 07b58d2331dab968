"""Checkpoint directories in verl's layout, shared by the PPO and SFT trainers.

::

    trainer.default_local_dir/
        global_step_N/                       what the trainer writes (actor/, critic/, trainer_state.json, ...)
        latest_checkpointed_iteration.txt    N of the newest complete checkpoint

A checkpoint is written into a temporary directory beside its final place and renamed into place only when
complete, then the iteration file is replaced atomically: a crash mid-save leaves the previous checkpoint and
the iteration file as they were. Every file of a checkpoint, and its directories, are fsynced before the rename, so
the rename cannot reach the disk before the data it publishes (a power loss leaves the old state, not an empty file).
A checkpoint is deleted (pruned, or replaced by a re-save of its step) by renaming
it out of sight first, so a ``global_step_N`` directory is always complete. A process killed outright leaves at most
hidden debris -- a ``.global_step_*`` staging or ``.old_global_step_*`` doomed directory, the iteration file's
temporary -- which the next save removes. ``resume_dir`` implements ``trainer.resume_mode`` = ``auto`` (the
newest checkpoint, if any) | ``disable`` | ``resume_path`` (``trainer.resume_from_path``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from typing import Any

from ..errors import CheckpointError, ConfigError
from ..utils.dataset.reader import read_json_file

__all__ = ["CheckpointDirectory", "write_atomic", "read_json", "write_json", "tokenizer_dir", "ITERATION_FILE",
           "LORA_ADAPTER_DIR", "save_lora_adapter", "restore_lora_adapter"]

ITERATION_FILE = "latest_checkpointed_iteration.txt"
#: verl's directory, inside a role's checkpoint (global_step_N/actor/), of its LoRA adapters in PEFT's format
LORA_ADAPTER_DIR = "lora_adapter"
_STEP_PREFIX = "global_step_"


def tokenizer_dir(*candidates: Any) -> str | None:
    """The first of ``candidates`` (paths or None; ``~`` expanded) that holds a ``tokenizer.json``: where a
    trainer loads its tokenizer from and whose tokenizer files it copies into every checkpoint."""
    for path in candidates:
        if path and os.path.exists(os.path.join(os.path.expanduser(str(path)), "tokenizer.json")):
            return os.path.expanduser(str(path))
    return None


def save_lora_adapter(module: Any, role_dir: str, base_model_path: Any) -> None:
    """A LoRA-trained role's adapters (``module``: a ``verl._C.model.CausalLM``) in PEFT's files in
    ``role_dir/lora_adapter/`` beside the merged model: what a resume loads onto the base model, and what
    ``peft.PeftModel.from_pretrained(base, dir)`` reads. Nothing for a model without adapters."""
    if module.lora is not None:
        from .. import _C

        _C.model.save_peft_adapter(module, os.path.join(role_dir, LORA_ADAPTER_DIR), str(base_model_path or ""))


def restore_lora_adapter(module: Any, role_dir: str, lora_keys: str) -> bool:
    """Resuming a role from ``role_dir``: with LoRA (``module`` has adapters) its adapters come back from
    ``lora_adapter/`` onto the base the run started from, and True says the merged weights beside them are not to be
    loaded; without LoRA, False (load the weights). A checkpoint of the other kind is a CheckpointError naming
    ``lora_keys`` (the settings to resume with)."""
    adapter_dir = os.path.join(role_dir, LORA_ADAPTER_DIR)
    if module.lora is None:
        if os.path.isdir(adapter_dir):
            raise CheckpointError(f"{role_dir} holds LoRA adapters ({LORA_ADAPTER_DIR}/) and merged weights: resume it "
                                  f"with the same {lora_keys} settings")
        return False
    if not os.path.isdir(adapter_dir):
        raise CheckpointError(f"{role_dir}: no {LORA_ADAPTER_DIR}/ for the LoRA adapters (a checkpoint of full "
                              f"fine-tuning cannot resume a LoRA run; {lora_keys})")
    from .. import _C

    _C.model.load_peft_adapter_into(module, adapter_dir)
    return True


def write_atomic(path: str, text: str) -> None:
    """Writes ``text`` to ``path`` through a temporary file, fsynced, renamed over ``path``."""
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(os.path.dirname(os.path.abspath(path)))


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_tree(root: str) -> None:
    """fsyncs every regular file under ``root`` and every directory, ``root`` last (links are not followed)."""
    for directory, _, files in os.walk(root, topdown=False):
        for name in files:
            path = os.path.join(directory, name)
            if os.path.isfile(path) and not os.path.islink(path):
                fd = os.open(path, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
        _fsync_dir(directory)


def write_json(path: str, value: Any) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f)


def read_json(path: str) -> Any:
    """The JSON value in ``path``; ``verl.CheckpointError`` naming the file when it cannot be read, is not UTF-8
    or not JSON, or nests deeper than any checkpoint file does."""
    return read_json_file(path, CheckpointError)


class CheckpointDirectory:
    """``trainer.default_local_dir``: the ``global_step_N`` checkpoints in it and the iteration file."""

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = os.path.expanduser(os.fspath(root))

    def step_dir(self, step: int) -> str:
        return os.path.join(self.root, f"{_STEP_PREFIX}{step}")

    def steps(self) -> list[int]:
        """The steps of the ``global_step_N`` directories present, ascending."""
        if not os.path.isdir(self.root):
            return []
        return sorted(int(name[len(_STEP_PREFIX):]) for name in os.listdir(self.root)
                      if name.startswith(_STEP_PREFIX) and name[len(_STEP_PREFIX):].isdigit())

    def save(self, step: int, write: Callable[[str], None], max_to_keep: int | None = None) -> str:
        """Calls ``write(tmp_dir)`` to fill a new checkpoint, renames it to ``global_step_<step>`` (replacing one
        of the same step), updates the iteration file and keeps the newest ``max_to_keep`` checkpoints (None or
        <= 0: all). Returns the checkpoint directory. If ``write`` raises, nothing changes and it re-raises."""
        os.makedirs(self.root, exist_ok=True)
        self._remove_stale_temporaries()
        final = self.step_dir(step)
        tmp = tempfile.mkdtemp(prefix=f".{_STEP_PREFIX}{step}.", dir=self.root)
        try:
            write(tmp)
            _fsync_tree(tmp)
            if os.path.exists(final):  # re-saving a step: move the old one aside first, drop it after
                old = self._move_aside(step)
                os.replace(tmp, final)
                shutil.rmtree(old, ignore_errors=True)
            else:
                os.replace(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        # The root is fsynced once, by write_atomic after the iteration file's rename: that one fsync makes both
        # renames of this save durable before save() returns and before pruning deletes anything (a kept iteration
        # file never names a pruned step). No fsync is needed between the two renames: the checkpoint's data is
        # already on disk (_fsync_tree), and Linux file systems journal a directory's renames in the order they were
        # made, so a crash cannot keep the iteration file's rename without the checkpoint's.
        write_atomic(os.path.join(self.root, ITERATION_FILE), str(step))
        self.prune(max_to_keep, saved=step)
        return final

    def _move_aside(self, step: int) -> str:
        """Renames ``global_step_<step>`` into a new hidden directory and returns that directory, for deletion. The
        rename is atomic: a process killed while deleting never leaves a half-deleted ``global_step_N`` that
        ``steps()`` would list (and ``resume_path`` load) as a checkpoint."""
        aside = tempfile.mkdtemp(prefix=f".old_{_STEP_PREFIX}{step}.", dir=self.root)
        os.replace(self.step_dir(step), os.path.join(aside, "ckpt"))
        return aside

    def _remove_stale_temporaries(self) -> None:
        """Removes what saves killed outright left: staging and doomed directories, iteration-file temporaries."""
        for name in os.listdir(self.root):
            path = os.path.join(self.root, name)
            if name.startswith((f".{_STEP_PREFIX}", f".old_{_STEP_PREFIX}")):
                shutil.rmtree(path, ignore_errors=True)
            elif name.startswith(f"{ITERATION_FILE}.tmp."):
                with contextlib.suppress(FileNotFoundError):
                    os.remove(path)

    def prune(self, max_to_keep: int | None, saved: int | None = None) -> None:
        """Deletes all but the newest ``max_to_keep`` checkpoints (None or <= 0: keeps all). With ``saved`` (the
        step just saved), that checkpoint is kept and counts as the newest: only steps below it are deleted, the
        ``max_to_keep - 1`` highest of them kept. Checkpoints of a later step than ``saved`` -- left by the run that
        this one resumed from an earlier step (``trainer.resume_from_path``) -- are not this run's to delete and
        stay. Without ``saved``, the highest steps are the newest."""
        if not max_to_keep or int(max_to_keep) <= 0:
            return
        keep = int(max_to_keep)
        steps = self.steps()
        if saved is not None:
            steps = [s for s in steps if s < saved]
            keep -= 1
        for old in steps[:len(steps) - keep] if keep > 0 else steps:
            shutil.rmtree(self._move_aside(old), ignore_errors=True)

    def latest(self) -> str | None:
        """The checkpoint the iteration file names, or None when there is none. ``verl.CheckpointError`` when the
        file is unreadable or names a missing directory."""
        marker = os.path.join(self.root, ITERATION_FILE)
        if not os.path.exists(marker):
            return None
        try:
            with open(marker, encoding="utf-8") as f:
                step = int(f.read().strip())
        except (OSError, ValueError) as e:
            raise CheckpointError(f"cannot read the step in {marker}: {e}") from e
        path = self.step_dir(step)
        if not os.path.isdir(path):
            raise CheckpointError(f"{marker} names step {step} but {path} does not exist")
        return path

    def resume_dir(self, resume_mode: str | None, resume_from_path: str | None) -> str | None:
        """The checkpoint to resume from for ``trainer.resume_mode`` / ``trainer.resume_from_path``, or None."""
        mode = str(resume_mode or "auto")
        if mode == "disable":
            return None
        if mode == "resume_path":
            if not resume_from_path:
                raise ConfigError("trainer.resume_mode=resume_path needs trainer.resume_from_path")
            path = os.path.expanduser(str(resume_from_path))
            if not os.path.isdir(path) or not os.path.basename(path.rstrip("/")).startswith(_STEP_PREFIX):
                raise ConfigError(f"trainer.resume_from_path must be a global_step_N directory, got {path}")
            return path
        if mode != "auto":
            raise ConfigError(f"trainer.resume_mode must be auto, disable or resume_path, got {mode!r}")
        return self.latest()
