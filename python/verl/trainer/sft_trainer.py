"""``verl.SFTTrainer``: supervised fine-tuning, the warm start before RL, on the C++ SFT step.

>>> from verl import SFTTrainer
>>> trainer = SFTTrainer(config={"model.path": "path/to/hf_model", "data.train_files": "sft.jsonl",
...                              "data.train_batch_size": 32, "optim.lr": 1e-4, "trainer.total_epochs": 2})
>>> trainer.fit()
>>> trainer.hf_model_path          # .../global_step_N/actor: use it as actor_rollout_ref.model.path

or ``python -m verl.trainer.sft_trainer model.path=... data.train_files=sft.jsonl ...`` with verl's
``sft_trainer`` keys (``verl.load_sft_config``). Rows are prompt/response pairs or chat conversations
(``verl.utils.dataset.SFTDataset``); the loss is the token-mean cross-entropy over the response tokens of the
global batch. One step is ``verl._C.trainer.SFTTrainer.train_step`` (C++, the GIL released): micro-batches by rows
(``data.micro_batch_size_per_gpu``) or by a token budget (``data.use_dynamic_bsz``, ``data.max_token_len_per_gpu``),
padding removed, gradients accumulated, clipped (``optim.clip_grad``), AdamW and the LR schedule (``optim.*``).

This module adds verl's driver around it: the shuffled resumable dataloader (``data.seed``), ``val/loss`` every
``trainer.test_freq`` steps and at the end, checkpoints every ``trainer.save_freq`` steps and at the end in the PPO
trainer's layout (``trainer.default_local_dir/global_step_N/actor/`` = the model in Hugging Face format with the
tokenizer files + ``optim.pt``; ``trainer_state.json``; ``latest_checkpointed_iteration.txt``; ``resume_mode``;
``max_ckpt_to_keep``), and tracking with verl's SFT metric names (``train/loss``, ``train/lr``,
``train/grad_norm``, ``train/mfu``, ``train/global_tokens``, ``train/total_tokens(B)``, ``val/loss``).
"""

from __future__ import annotations

import functools
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .. import _C
from ..config import Config, load_sft_config
from ..errors import CheckpointError, ConfigError, DataError
from ..models.gguf_checkpoint import resolve_gguf_paths
from ..protocol import DataProto
from ..utils.dataset.dataloader import ResumableDataLoader
from ..utils.dataset.sft_dataset import SFTDataset, collate_sft
from . import distributed
from .checkpointing import (CheckpointDirectory, read_json, restore_lora_adapter, save_lora_adapter, tokenizer_dir,
                            write_json)
from .ppo_trainer import _DTYPES, _device, _load_model
from .rl_config import _set_tree

__all__ = ["SFTTrainer", "SFTDataset", "as_sft_config", "main"]

_BATCH_KEYS = ("input_ids", "attention_mask", "loss_mask")


def as_sft_config(config: Any = None) -> Config:
    """A validated SFT config (``verl.load_sft_config``'s tree) from None (the defaults), a YAML path, a dict
    (dotted keys and/or nested sections: ``{"optim.lr": 1e-4}`` or ``{"optim": {"lr": 1e-4}}``) or a
    ``verl.Config`` made by ``load_sft_config`` (copied)."""
    if config is None:
        return load_sft_config()
    if isinstance(config, _C.Config):
        config = Config(config)
    if isinstance(config, Config):
        if not config.is_sft:
            raise ConfigError("SFTTrainer needs the SFT config tree (verl.load_sft_config), got the PPO tree "
                              "(verl.load_config)")
        return config.copy().validate()
    if isinstance(config, (str, os.PathLike)):
        return load_sft_config(config)
    if isinstance(config, Mapping):
        cfg = load_sft_config()
        for key, value in config.items():  # sections merge key by key; unknown keys: ConfigError
            _set_tree(cfg, str(key), value)
        return cfg.validate()
    raise ConfigError(f"config must be a verl.Config (load_sft_config), a dict or a YAML path, got "
                      f"{type(config).__name__}")


def _as_cpp_batch(batch: Any) -> Any:
    """A ``verl._C.DataProto`` holding input_ids / attention_mask / loss_mask (tensors shared, not copied)."""
    if isinstance(batch, _C.DataProto):
        return batch
    if isinstance(batch, DataProto):
        return batch.to_cpp()
    if isinstance(batch, Sequence) and batch and isinstance(batch[0], Mapping):  # dataset rows
        batch = collate_sft(list(batch))
    if isinstance(batch, Mapping):
        return _C.DataProto({k: batch[k] for k in _BATCH_KEYS if k in batch}, {}, {})
    raise DataError(f"an SFT batch must be a dict of tensors (input_ids, attention_mask, loss_mask), a DataProto or "
                    f"a list of dataset rows, got {type(batch).__name__}")


class SFTTrainer:
    """verl's SFT trainer. See the module docstring.

    Args:
        config: None (defaults), a dict, a YAML path or a ``verl.load_sft_config`` tree.
        model: a ``verl.models.CausalLM`` to train in place; default: loaded from ``model.path`` in ``model.dtype``
            on ``trainer.device`` (the CPU when CUDA is not available).
        tokenizer: default: loaded from ``model.tokenizer_path`` or ``model.path``. Its files are copied into every
            checkpoint (from ``model.tokenizer_path`` / ``model.path`` / the directory it was loaded from).
        train_dataset / val_dataset: ``SFTDataset`` objects, other datasets of ``{"input_ids", "loss_mask"}`` rows,
            file paths, or None for ``data.train_files`` / ``data.val_files``.
    """

    def __init__(self, config: Any = None, model: Any = None, tokenizer: Any = None, train_dataset: Any = None,
                 val_dataset: Any = None) -> None:
        self.config = cfg = as_sft_config(config)
        resolve_gguf_paths(cfg, ("model.path", "model.tokenizer_path"))
        self.device = _device(cfg)
        if model is None:
            model = self._load_model()
        self.model = model if not isinstance(model, _C.model.CausalLM) else self._wrap(model)
        module = getattr(self.model, "_module", None)
        if not isinstance(module, _C.model.CausalLM) or module.value_head:
            raise TypeError(f"model must be a verl.models.CausalLM (LM head), got {type(model).__name__}")
        self.tokenizer = tokenizer if tokenizer is not None else self._load_tokenizer()

        self.train_dataset = self._dataset(train_dataset, "train_files", "train_max_samples")
        self.val_dataset = self._dataset(val_dataset, "val_files", "val_max_samples")
        self.train_dataloader = None
        if self.train_dataset is not None:
            self.train_dataloader = ResumableDataLoader(
                self.train_dataset, int(cfg.get("data.train_batch_size")), shuffle=bool(cfg.get("data.shuffle")),
                seed=cfg.get("data.seed"), drop_last=True, collate_fn=self._collate_fn(self.train_dataset))
        configured = cfg.get("trainer.total_training_steps")
        if self.train_dataloader is not None:
            # verl: trainer.total_training_steps when set, else every batch of every epoch
            epochs = int(cfg.get("trainer.total_epochs"))
            self.total_training_steps = int(configured or len(self.train_dataloader) * epochs)
        else:
            self.total_training_steps = int(configured) if configured else None
        self._trainer = self._make_step(module)
        # torchrun (or the one-command spawn) over trainer.nnodes x trainer.n_gpus_per_node ranks: SPMD, as verl's
        # SFT -- every rank runs this loop on the same batches and trains on its share (ZeRO-3 over engine.fsdp_size);
        # rank 0 logs and writes the checkpoint's shared files.
        self.launch = distributed.LaunchEnv.from_environ()
        self.communicator, mesh = distributed.device_mesh(cfg, str(self.device), self.launch)
        if self.communicator is not None:
            self._trainer.set_data_parallel(mesh.trainer, mesh.actor_shard, mesh.actor_replicas)
        self.global_steps = 0
        self.epoch = 0
        self.total_tokens = 0
        self.tracker = None
        self._hf_model_path: str | None = None

    # -- construction helpers -----------------------------------------------------------------------
    @staticmethod
    def _wrap(module: Any) -> Any:
        from ..models.transformer import CausalLM

        return CausalLM._from_module(module)

    def _load_model(self) -> Any:
        path = self.config.get("model.path")
        if not path:
            raise ConfigError("model.path is not set and no model was given")
        name = str(self.config.get("model.dtype") or "fp32")
        return _load_model(str(path), _DTYPES[name], self.device, key="model.path")

    def _tokenizer_dir(self) -> str | None:
        """The directory whose tokenizer files go into checkpoints."""
        return tokenizer_dir(self.config.get("model.tokenizer_path"), self.config.get("model.path"),
                             getattr(self.tokenizer, "name_or_path", None))

    def _make_step(self, module: Any) -> Any:
        """The C++ step object (``verl._C.trainer.SFTTrainer``) over the model's module."""
        return _C.trainer.SFTTrainer(self.config.cpp, module, self.total_training_steps)

    def _load_tokenizer(self) -> Any:
        path = tokenizer_dir(self.config.get("model.tokenizer_path"), self.config.get("model.path"))
        if path is None:
            return None
        from ..tokenizer import load_tokenizer

        return load_tokenizer(path)

    def _dataset(self, dataset: Any, files_key: str, max_key: str) -> Any:
        if dataset is None:
            files = self.config.get(f"data.{files_key}")
            if not files:
                return None
            paths = [os.path.expanduser(str(p)) for p in ([files] if isinstance(files, str) else list(files))]
            if not all(os.path.exists(p) for p in paths):
                return None  # verl's placeholder default paths: fit() reports the missing data
            dataset = paths
        if isinstance(dataset, (str, os.PathLike)) or (isinstance(dataset, Sequence) and dataset
                                                       and isinstance(dataset[0], (str, os.PathLike))):
            if self.tokenizer is None:
                raise ConfigError("no tokenizer to tokenize the SFT data: pass tokenizer=... or put tokenizer.json in "
                                  "model.tokenizer_path / model.path")
            return self._file_dataset(dataset, int(self.config.get(f"data.{max_key}")))
        return dataset

    def _file_dataset(self, paths: Any, max_samples: int) -> Any:
        """The dataset of data files (``SFTDataset``)."""
        return SFTDataset(paths, self.tokenizer, self.config.data, max_samples=max_samples)

    # pads the rows of a dataset without its own collate_fn (the DPO trainer: collate_preference)
    _collate_rows = staticmethod(collate_sft)

    def _collate_fn(self, dataset: Any) -> Any:
        collate = getattr(dataset, "collate_fn", None)
        if callable(collate):
            return collate
        pad = getattr(self.tokenizer, "pad_token_id", None)
        if pad is None:
            pad = getattr(self.tokenizer, "eos_token_id", None)
        return functools.partial(self._collate_rows, pad_token_id=pad if pad is not None else 0)

    # -- one step -------------------------------------------------------------------------------------
    def train_step(self, batch: Any) -> dict[str, float]:
        """One optimizer step on a batch (collated dict, DataProto or list of dataset rows); verl's SFT metrics
        (``train/loss``, ``train/grad_norm``, ``train/lr``, ``train/mfu``, ``train/global_tokens``, ``train/total_tokens(B)``)."""
        metrics = dict(self._trainer.train_step(_as_cpp_batch(batch)))
        self.global_steps = self._trainer.global_step
        self.total_tokens += int(metrics["train/global_tokens"])
        metrics["train/total_tokens(B)"] = self.total_tokens / 1e9
        return metrics

    def _validation_batches(self, dataset: Any = None) -> Any:
        """The validation set (``val_dataset``, or ``dataset``) in order, in batches of ``data.train_batch_size``."""
        dataset = dataset if dataset is not None else self.val_dataset
        if dataset is None:
            raise ConfigError("validate: no validation data (pass val_dataset or set data.val_files)")
        dataset = self._dataset(dataset, "val_files", "val_max_samples")
        return ResumableDataLoader(dataset, min(int(self.config.get("data.train_batch_size")), len(dataset)),
                                   shuffle=False, drop_last=False, collate_fn=self._collate_fn(dataset))

    def validate(self, dataset: Any = None) -> dict[str, float]:
        """``{"val/loss": ...}``: the token-mean cross-entropy over every response token of the validation set
        (``val_dataset``, or ``dataset``: an SFTDataset or file paths) under the current weights."""
        loss_sum, num_tokens = 0.0, 0
        for batch in self._validation_batches(dataset):
            s, n = self._trainer.loss_sum(_as_cpp_batch(batch))
            loss_sum += s
            num_tokens += n
        if num_tokens == 0:
            raise DataError("validate: the validation data has no response token")
        return {"val/loss": loss_sum / num_tokens}

    # -- the loop -------------------------------------------------------------------------------------
    @property
    def rank(self) -> int:
        """This process's data-parallel rank (0 in one process)."""
        return self.communicator.rank if self.communicator is not None else 0

    def _tracker(self) -> Any:
        from ..utils.tracking import tracking_from_config

        if self.rank != 0:  # every rank computes the global metrics; rank 0 logs them
            return _NoTracker()
        return tracking_from_config(self.config, total_steps=self.total_training_steps)

    def fit(self) -> dict[str, float] | None:
        """verl's SFT loop: resumes per ``trainer.resume_mode``, then ``trainer.total_epochs`` x batches (or
        ``trainer.total_training_steps``), ``val/loss`` every ``trainer.test_freq`` steps and at the end, a
        checkpoint every ``trainer.save_freq`` steps and at the end; every step's metrics to the tracker.
        Returns the last validation metrics (None without validation data)."""
        if self.train_dataloader is None:
            raise ConfigError(f"fit: no training data: data.train_files={self.config.get('data.train_files')!r} "
                              "does not exist and no train_dataset was given")
        cfg = self.config
        self.tracker = tracker = self._tracker()
        last_val: dict[str, float] | None = None
        try:
            self._load_checkpoint()
            epochs = int(cfg.get("trainer.total_epochs"))
            last_step = min(self.total_training_steps, len(self.train_dataloader) * epochs)
            test_freq = int(cfg.get("trainer.test_freq"))
            save_freq = int(cfg.get("trainer.save_freq"))
            if self.global_steps >= last_step:
                return last_val
            for epoch in range(self.global_steps // len(self.train_dataloader), epochs):
                self.epoch = epoch
                for batch in self.train_dataloader:
                    start = time.perf_counter()
                    metrics = self.train_step(batch)
                    metrics["timing_s/step"] = time.perf_counter() - start
                    step = self.global_steps
                    is_last_step = step >= last_step
                    if self.val_dataset is not None and (is_last_step or (test_freq > 0 and step % test_freq == 0)):
                        start = time.perf_counter()
                        last_val = self.validate()
                        metrics.update(last_val)
                        metrics["timing_s/testing"] = time.perf_counter() - start
                    if is_last_step or (save_freq > 0 and step % save_freq == 0):
                        start = time.perf_counter()
                        self.save_checkpoint()
                        metrics["timing_s/save_checkpoint"] = time.perf_counter() - start
                    tracker.log(metrics, step=step)
                    if is_last_step:
                        return last_val
            return last_val
        finally:
            tracker.finish()

    # -- checkpoints ----------------------------------------------------------------------------------
    @property
    def checkpoint_dir(self) -> str:
        return os.path.expanduser(str(self.config.get("trainer.default_local_dir")))

    @property
    def hf_model_path(self) -> str | None:
        """``.../global_step_N/actor`` of the last checkpoint saved or resumed from: the model in Hugging Face format
        with the tokenizer files, usable as ``actor_rollout_ref.model.path``. None before any."""
        return self._hf_model_path

    def save_checkpoint(self) -> str:
        """Writes ``trainer.default_local_dir/global_step_N/`` (``actor/``: the model in Hugging Face format, the
        tokenizer files and ``optim.pt`` with the AdamW and scheduler state; ``trainer_state.json``: step, epoch,
        tokens seen, dataloader position) atomically, then ``latest_checkpointed_iteration.txt``; keeps
        ``trainer.max_ckpt_to_keep`` checkpoints. Returns the checkpoint directory."""
        import verl.models as models

        tokenizer_dir = self._tokenizer_dir()
        engine = self._trainer.engine
        if engine.sharded:
            return self._save_sharded_checkpoint(tokenizer_dir)

        def write(tmp: str) -> None:
            actor = os.path.join(tmp, "actor")
            models.save_pretrained(self.model, actor, tokenizer_dir=tokenizer_dir)  # merged, with LoRA
            if tokenizer_dir is None and callable(getattr(self.tokenizer, "save_pretrained", None)):
                self.tokenizer.save_pretrained(actor)  # a transformers tokenizer without a local directory
            save_lora_adapter(self.model._module, actor, self.config.get("model.path"))
            engine.save_checkpoint(actor)  # optim.pt
            self._write_trainer_state(tmp)

        path = CheckpointDirectory(self.checkpoint_dir).save(self.global_steps, write,
                                                             self.config.get("trainer.max_ckpt_to_keep"))
        self._hf_model_path = os.path.join(path, "actor")
        return path

    def _write_trainer_state(self, tmp: str) -> None:
        write_json(os.path.join(tmp, "trainer_state.json"), {
            "global_step": self.global_steps, "epoch": self.epoch, "total_tokens": self.total_tokens,
            "dataloader": self.train_dataloader.state_dict() if self.train_dataloader is not None else None})

    def _save_sharded_checkpoint(self, tokenizer_dir: str | None) -> str:
        """Over several ranks, as verl's FSDP checkpoints: ``actor/`` holds every rank's
        ``model_world_size_N_rank_r.safetensors`` and ``optim_world_size_N_rank_r.safetensors`` beside rank 0's
        config.json and tokenizer files (nothing gathers the model; ``python -m verl.model_merger merge --backend fsdp``
        joins them into a Hugging Face checkpoint). Rank 0 stages the step directory and renames it into place once
        every rank has written; a failure on any rank fails the save on every rank and leaves the previous checkpoint."""
        comm, engine = self.communicator, self._trainer.engine

        def write_shards(tmp: str) -> None:
            error = None
            try:
                engine.save_checkpoint(os.path.join(tmp, "actor"), tokenizer_dir)
            except Exception as e:  # noqa: BLE001 -- reported to every rank below
                error = e
            if comm.all_reduce_sum(0.0 if error is None else 1.0) > 0:
                raise error if error is not None else CheckpointError(
                    f"saving the checkpoint of step {self.global_steps} failed on another rank")

        if self.rank != 0:
            tmp = comm.broadcast_bytes(b"", 0).decode()
            if not tmp:
                raise CheckpointError(f"rank 0 could not stage the checkpoint of step {self.global_steps}")
            write_shards(tmp)
            comm.barrier()  # rank 0 renamed the step into place (or failed)
            path = CheckpointDirectory(self.checkpoint_dir).step_dir(self.global_steps)
            self._hf_model_path = os.path.join(path, "actor")
            return path

        def write(tmp: str) -> None:
            comm.broadcast_bytes(tmp.encode(), 0)
            write_shards(tmp)
            self._write_trainer_state(tmp)

        try:
            path = CheckpointDirectory(self.checkpoint_dir).save(self.global_steps, write,
                                                                 self.config.get("trainer.max_ckpt_to_keep"))
        finally:
            comm.barrier()
        self._hf_model_path = os.path.join(path, "actor")
        return path

    def load_checkpoint(self, path: str) -> None:
        """Restores the weights, the optimizer and scheduler states, the step and the dataloader position (every
        rank; a sharded checkpoint at any number of ranks)."""
        actor = os.path.join(path, "actor")
        if restore_lora_adapter(self.model._module, actor, "model.lora_*"):
            self._trainer.load_optimizer(os.path.join(actor, "optim.pt"))
        else:
            self._trainer.engine.load_checkpoint(actor)
        state = read_json(os.path.join(path, "trainer_state.json"))
        try:
            self.global_steps = int(state["global_step"])
            self.epoch = int(state.get("epoch", 0))
            self.total_tokens = int(state.get("total_tokens", 0))
        except (KeyError, TypeError, ValueError) as e:
            raise CheckpointError(f"{path}/trainer_state.json: malformed ({e})") from e
        self._trainer.global_step = self.global_steps
        if state.get("dataloader") is not None and self.train_dataloader is not None:
            self.train_dataloader.load_state_dict(state["dataloader"])
        self._hf_model_path = actor

    def _load_checkpoint(self) -> None:
        path = CheckpointDirectory(self.checkpoint_dir).resume_dir(self.config.get("trainer.resume_mode"),
                                                                   self.config.get("trainer.resume_from_path"))
        if path is not None:
            self.load_checkpoint(path)


def spawns_local_ranks(config: Config) -> bool:
    """``trainer.n_gpus_per_node=N`` (N > 1) without torchrun: the command starts its N local ranks itself (one node;
    ConfigError for ``trainer.nnodes`` > 1, which needs torchrun on every node)."""
    if "WORLD_SIZE" in os.environ or distributed.trainer_world_size(config) == 1:
        return False
    if int(config.get("trainer.nnodes")) > 1:
        raise ConfigError("trainer.nnodes > 1 needs torchrun on every node (torchrun --nnodes <trainer.nnodes> "
                          "--nproc_per_node <trainer.n_gpus_per_node> -m verl.trainer.sft_trainer ...)")
    return True


class _NoTracker:
    """A data-parallel rank other than 0: rank 0 logs the (global) metrics."""

    def log(self, data: Any, step: int) -> None:
        pass

    def finish(self) -> None:
        pass


def cli_exit_status(run: Callable[[], int | None]) -> int:
    """Runs a trainer command line's body: its status (0 for None), or 2 with the message on stderr for config and
    data errors (which name the key / file:line), 1 for checkpoint errors. Shared by the SFT and DPO entry points."""
    try:
        return run() or 0
    except (ConfigError, DataError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except CheckpointError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


def main(argv: list[str] | None = None) -> int:
    """``python -m verl.trainer.sft_trainer [--print-config] [--explain KEY] [--config-path DIR --config-name NAME]
    key=value ...``:
    exit status 2 with a message naming the key / file:line for config and data errors."""
    from .main_ppo import explain_keys, parse_args, split_explain

    def run() -> int:
        explain, args = split_explain(sys.argv[1:] if argv is None else argv)
        print_config, yaml_path, overrides = parse_args(args, prog="verl.trainer.sft_trainer",
                                                        base_config_name="sft_trainer")
        config = load_sft_config(yaml_path, overrides)
        if explain:
            sys.stdout.write(explain_keys(explain, config))
            return 0
        if print_config:
            sys.stdout.write(config.to_yaml())
            return 0
        if spawns_local_ranks(config):
            return distributed.launch_local_workers(distributed.trainer_world_size(config), list(args),
                                                    module="verl.trainer.sft_trainer")
        SFTTrainer(config=config).fit()
        return 0

    return cli_exit_status(run)


if __name__ == "__main__":
    sys.exit(main())
