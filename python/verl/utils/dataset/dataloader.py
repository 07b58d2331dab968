"""A resumable batch loader over a dataset (what verl gets from torchdata's ``StatefulDataLoader``).

Order: with ``shuffle`` each epoch is ``torch.randperm(len(dataset), generator=g)`` from one ``torch.Generator``
seeded once (``seed``; None keeps torch's fixed default seed, as ``torch.Generator()`` does in verl), so
epochs differ and the order equals verl's ``RandomSampler(generator=g)`` epoch after epoch (including the extra
draw RandomSampler makes at the end of each epoch); without it, the dataset order.
``drop_last`` drops a final short batch (verl's train loader does, the validation loader does not).

``state_dict()`` (plain ints, JSON-serialisable) records the generator state at the start of the current
epoch and the number of batches already handed out; ``load_state_dict`` makes the next iteration continue
exactly with the following batch. Batches are built in the calling thread (no worker processes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import torch

from ...errors import DataError
from .rl_dataset import TORCH_SEED_MIN, _cfg, _cfg_bool, _cfg_int, _cfg_seed, check_bool, check_int, check_seed
from .rl_dataset import collate_fn as default_collate_fn

__all__ = ["ResumableDataLoader", "create_rl_dataloader"]

_STATE_VERSION = 1


class ResumableDataLoader:
    """``for batch in loader:`` runs (the rest of) one epoch; ``len(loader)`` batches per full epoch."""

    def __init__(self, dataset: Any, batch_size: int, shuffle: bool = False, seed: int | None = None,
                 drop_last: bool = False, collate_fn: Callable[[list], Any] | None = None) -> None:
        # ConfigErrors naming the argument, not TypeErrors from torch (the values often come from a config)
        self.dataset = dataset
        self.batch_size = check_int("batch_size", batch_size, minimum=1)
        self.shuffle = check_bool("shuffle", shuffle)
        self.seed = check_seed("seed", seed, minimum=TORCH_SEED_MIN)
        self.drop_last = check_bool("drop_last", drop_last)
        self.collate_fn = collate_fn or default_collate_fn
        self.generator = torch.Generator()
        if self.seed is not None:
            self.generator.manual_seed(self.seed)
        self._epoch = 0
        self._epoch_start_state: torch.Tensor | None = None  # generator state before this epoch's permutation
        self._batches_done = 0  # batches handed out in the current epoch
        if len(dataset) == 0:
            raise DataError("the dataset is empty")
        if drop_last and len(dataset) < batch_size:
            raise DataError(f"dataset has {len(dataset)} rows, fewer than one batch of {batch_size} with drop_last")

    def __len__(self) -> int:
        n = len(self.dataset)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    @property
    def epoch(self) -> int:
        """Epochs completed (an epoch counts when its last batch has been handed out)."""
        return self._epoch

    def _order(self) -> list[int]:
        n = len(self.dataset)
        if not self.shuffle:
            return list(range(n))
        order = torch.randperm(n, generator=self.generator).tolist()
        # torch's RandomSampler then draws the permutation for its (empty) remainder slice, which advances the
        # generator once more per epoch; the next epoch's order depends on it.
        torch.randperm(n, generator=self.generator)
        return order

    def __iter__(self) -> Iterator[Any]:
        if self._epoch_start_state is None or self._batches_done >= len(self):
            self._epoch_start_state = self.generator.get_state()
            self._batches_done = 0
        else:  # resuming inside an epoch: rebuild its permutation from the saved generator state
            self.generator.set_state(self._epoch_start_state)
        order = self._order()
        while self._batches_done < len(self):
            start = self._batches_done * self.batch_size
            rows = [self.dataset[i] for i in order[start:start + self.batch_size]]
            self._batches_done += 1  # counted before handing out: a checkpoint taken now resumes after it
            if self._batches_done == len(self):
                self._epoch += 1
            yield self.collate_fn(rows)
        self._epoch_start_state = None

    def state_dict(self) -> dict:
        """Where the loader is: ``{"version", "epoch", "batches_done", "generator_state" (list of ints)}``."""
        mid_epoch = self._epoch_start_state is not None and self._batches_done < len(self)
        state = self._epoch_start_state if mid_epoch else self.generator.get_state()
        return {"version": _STATE_VERSION, "epoch": self._epoch, "batches_done": self._batches_done if mid_epoch else 0,
                "generator_state": state.tolist(), "dataset_len": len(self.dataset), "batch_size": self.batch_size,
                "shuffle": self.shuffle}

    def load_state_dict(self, state: dict) -> None:
        """Continues from ``state``; ``DataError`` when it was saved for another dataset size / batch size."""
        # The state comes back from a checkpoint file: every field is checked, so a damaged one is a DataError.
        if not isinstance(state, dict) or state.get("version") != _STATE_VERSION:
            version = state.get("version") if isinstance(state, dict) else state
            raise DataError(f"dataloader state version {version!r} is not {_STATE_VERSION}")
        mine_by_key = {"dataset_len": len(self.dataset), "batch_size": self.batch_size, "shuffle": self.shuffle}
        for key, mine in mine_by_key.items():
            if state.get(key) != mine:
                raise DataError(f"dataloader state was saved with {key}={state.get(key)!r}, this loader has {mine!r}")
        counts = {key: state.get(key) for key in ("epoch", "batches_done")}
        generator_state = state.get("generator_state")
        if (any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in counts.values())
                or not isinstance(generator_state, list)
                or not all(type(b) is int and 0 <= b < 256 for b in generator_state)):
            raise DataError("dataloader state is damaged: epoch and batches_done must be non-negative integers and "
                            "generator_state a list of bytes")
        start_state = torch.tensor(generator_state, dtype=torch.uint8)
        try:
            self.generator.set_state(start_state)
        except RuntimeError as e:  # a list of the wrong length
            raise DataError(f"dataloader state is damaged: generator_state: {e}") from e
        self._epoch = counts["epoch"]
        self._epoch_start_state = start_state
        self._batches_done = counts["batches_done"]


def create_rl_dataloader(dataset: Any, data_config: Any, train: bool = True,
                         collate_fn: Callable[[list], Any] | None = None) -> ResumableDataLoader:
    """verl's loaders from the ``data`` config: train -> ``train_batch_size`` (``gen_batch_size`` when set),
    ``shuffle``, ``seed``, drop_last; validation -> ``val_batch_size`` (None: the whole set), ``validation_shuffle``,
    keep the last batch."""

    # every value read through the typed getters: a bad one is a ConfigError naming its data.* key
    seed = _cfg_seed(data_config)
    if train:
        key = "gen_batch_size" if _cfg(data_config, "gen_batch_size", None) is not None else "train_batch_size"
        return ResumableDataLoader(dataset, _cfg_int(data_config, key, None, minimum=1),
                                   shuffle=_cfg_bool(data_config, "shuffle", True), seed=seed, drop_last=True,
                                   collate_fn=collate_fn)
    return ResumableDataLoader(dataset, _cfg_int(data_config, "val_batch_size", len(dataset), minimum=1),
                               shuffle=_cfg_bool(data_config, "validation_shuffle", False), seed=seed, drop_last=False,
                               collate_fn=collate_fn)
