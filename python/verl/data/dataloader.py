"""``verl.data.get_dataloader``: batches of prompts from files in verl's schema, for a training loop that calls
``PPOTrainer.step(batch)`` itself.

>>> loader = verl.data.get_dataloader("train.parquet", batch_size=8)
>>> for rows in loader:                       # lists of 8 rows (dicts in verl's schema)
...     result = trainer.step(rows)

Without a tokenizer a batch is a list of rows as the files hold them (``prompt`` chat messages, the ground truth in
``reward_model.ground_truth`` -- moved there from ``extra_info.ground_truth`` when it sits there --, ``data_source``,
``extra_info``); the trainer renders and tokenizes them. With ``tokenizer=`` it is verl's collated batch dict
(``input_ids`` / ``attention_mask`` / ``position_ids`` left-padded to ``max_prompt_length``, the other columns as
numpy object arrays), as verl's own dataloader yields. Either way the loader is verl-cpp's resumable one
(``state_dict`` / ``load_state_dict``), with torch's shuffling order for a given ``seed``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any

from ..errors import DataError
from ..utils.dataset.dataloader import ResumableDataLoader
from ..utils.dataset.reader import RowOrigin, read_rows
from ..utils.dataset.rl_dataset import RLHFDataset, _cfg_str, check_row, select_max_samples

__all__ = ["get_dataloader", "RowDataset"]

_HUB_NAME = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")


class RowDataset:
    """The rows of verl-schema files, checked (``check_row``: chat ``prompt``, a ground truth) but not tokenized."""

    def __init__(self, data_files: str | os.PathLike | Sequence[str | os.PathLike], prompt_key: str = "prompt",
                 max_samples: int = -1) -> None:
        paths = [data_files] if isinstance(data_files, (str, os.PathLike)) else list(data_files)
        self.data_files = [os.fspath(p) for p in paths]
        self.rows = [check_row(row, RowOrigin(path, line), prompt_key)
                     for path in self.data_files for row, line in read_rows(path)]
        self.rows = [self.rows[i] for i in select_max_samples(len(self.rows), max_samples, False, None)]

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, item: int) -> dict:
        return dict(self.rows[item])

    def __repr__(self) -> str:
        return f"RowDataset({len(self)} rows from {self.data_files})"


def _check_files(data_files: Any) -> list[str]:
    paths = [data_files] if isinstance(data_files, (str, os.PathLike)) else data_files
    if not isinstance(paths, Sequence) or not paths or not all(isinstance(p, (str, os.PathLike)) for p in paths):
        raise DataError(f"data_files must be a path or a non-empty list of paths, got {data_files!r}")
    out = []
    for path in map(os.fspath, paths):
        if not os.path.exists(os.path.expanduser(path)) and _HUB_NAME.fullmatch(path):
            raise DataError(f"data file not found: {path!r} looks like a Hugging Face dataset name; verl-cpp does not "
                            "download datasets. Download it and convert it to verl's schema first (JSONL or Parquet "
                            "rows with 'prompt' chat messages and 'reward_model.ground_truth'; see "
                            "examples/gsm8k/preprocess.py)")
        out.append(path)
    return out


def get_dataloader(data_files: str | os.PathLike | Sequence[str | os.PathLike], batch_size: int = 8, *,
                   tokenizer: Any = None, shuffle: bool = True, seed: int | None = None, drop_last: bool = False,
                   max_samples: int = -1, config: Any = None) -> ResumableDataLoader:
    """A resumable loader over ``data_files`` (see the module docstring).

    Args:
        data_files: a ``.jsonl`` / ``.json`` / ``.parquet`` path or a list of them (rows concatenated in order).
        batch_size: rows per batch.
        tokenizer: None for lists of rows; a ``verl.Tokenizer`` or transformers tokenizer for verl's tokenized
            batch dicts (``config``, the ``data`` section, sets ``max_prompt_length``, ``truncation``, ...).
        shuffle / seed: a new torch permutation each epoch, reproducible for a given seed.
        drop_last: drop a final short batch.
        max_samples: keep only the first this many rows (-1: all).

    Raises ``verl.DataError`` for a missing or malformed file or row (naming ``file:line``) and
    ``verl.ConfigError`` for a bad batch size, seed or flag.
    """
    paths = _check_files(data_files)
    if tokenizer is None:
        dataset: Any = RowDataset(paths, prompt_key=_cfg_str(config, "prompt_key", "prompt"), max_samples=max_samples)
        collate = list
    else:
        dataset = RLHFDataset(paths, tokenizer, config, max_samples=max_samples)
        collate = None  # verl's collate_fn
    return ResumableDataLoader(dataset, batch_size, shuffle=shuffle, seed=seed, drop_last=drop_last,
                               collate_fn=collate)
