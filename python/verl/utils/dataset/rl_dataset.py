"""RL prompt datasets in verl's schema (verl's ``verl.utils.dataset.rl_dataset``).

A row is a JSON object (JSONL / JSON files) or a Parquet record::

    {"data_source": "openai/gsm8k",
     "prompt": [{"role": "user", "content": "..."}],          # data.prompt_key, chat messages
     "reward_model": {"style": "rule", "ground_truth": "72"},
     "extra_info": {"index": 0, ...}, ...}

``RLHFDataset[i]`` renders the chat template (generation prompt added), tokenizes without special tokens and
returns verl's row dict: ``input_ids`` / ``attention_mask`` / ``position_ids`` (max_prompt_length,) left-padded,
``raw_prompt_ids`` (unpadded, truncated the same way), ``raw_prompt`` (the messages, with ``return_raw_chat``),
``full_prompts`` (the rendered text, with ``return_full_prompt``), ``index`` (``extra_info.index``), and every
other column of the row unchanged. ``collate_fn`` stacks rows into verl's batch dict; ``collate_to_dataproto``
into a ``verl.DataProto``.

Prompts longer than ``max_prompt_length`` follow ``truncation``: ``error`` (a ``verl.DataError`` naming file and
line), ``left`` (keep the end), ``right`` (keep the start), ``middle`` (keep both ends, ``max//2`` from the
start). ``filter_overlong_prompts`` drops them at load time instead.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ...errors import ConfigError, DataError
from ...protocol import DataProto

__all__ = ["RLHFDataset", "create_rl_dataset", "collate_fn", "collate_to_dataproto", "compute_position_id_with_mask",
           "TRUNCATION_MODES", "RowOrigin", "read_rows", "check_messages", "render_chat", "render_prompt",
           "select_max_samples"]

TRUNCATION_MODES = ("error", "left", "right", "middle")


def compute_position_id_with_mask(mask: torch.Tensor) -> torch.Tensor:
    """Position ids that skip padding: ``clip(cumsum(mask) - 1, min=0)`` (verl.utils.model); same shape."""
    return torch.clip(torch.cumsum(mask, dim=-1) - 1, min=0, max=None)


def _object_column(values: Sequence[Any]) -> np.ndarray:
    column = np.empty(len(values), dtype=object)
    for i, value in enumerate(values):  # element-wise: np.array would split lists/dicts into extra dimensions
        column[i] = value
    return column


def collate_fn(data_list: list[dict]) -> dict:
    """verl's collate: tensors stacked to (bs, ...), everything else as a numpy object array (bs,)."""
    tensors: dict[str, list] = {}
    non_tensors: dict[str, list] = {}
    for row in data_list:
        for key, value in row.items():
            (tensors if isinstance(value, torch.Tensor) else non_tensors).setdefault(key, []).append(value)
    out: dict[str, Any] = {key: torch.stack(values, dim=0) for key, values in tensors.items()}
    for key, values in non_tensors.items():
        if len(values) != len(data_list):
            raise DataError(f"collate_fn: column '{key}' is present in {len(values)} of {len(data_list)} rows")
        out[key] = _object_column(values)
    return out


def collate_to_dataproto(data_list: list[dict]) -> DataProto:
    """``collate_fn`` then ``DataProto.from_single_dict`` (what verl's trainer does with each batch)."""
    return DataProto.from_single_dict(collate_fn(data_list))


@dataclass(frozen=True)
class RowOrigin:
    """Where a row came from, for error messages: ``file:line`` (Parquet: the 1-based row number)."""

    path: str
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


def _cfg(config: Any, key: str, default: Any) -> Any:
    if config is None:
        return default
    value = config.get(key, default) if hasattr(config, "get") else getattr(config, key, default)
    if hasattr(value, "to_dict"):
        value = value.to_dict()
    return default if value is None else value


def _read_json_rows(path: str) -> list[tuple[Any, int]]:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    stripped = text.lstrip()
    if path.endswith(".json") and stripped.startswith("["):  # a JSON array file
        try:
            rows = json.loads(text)
        except json.JSONDecodeError as e:
            raise DataError(f"{path}:{e.lineno}: invalid JSON: {e.msg}") from e
        # line numbers of array items are not tracked; report item positions (1-based) instead
        return [(row, i + 1) for i, row in enumerate(rows)]
    rows = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append((json.loads(line), lineno))
        except json.JSONDecodeError as e:
            raise DataError(f"{path}:{lineno}: invalid JSON: {e.msg} (column {e.colno})") from e
    return rows


def _read_parquet_rows(path: str) -> list[tuple[Any, int]]:
    try:
        import pyarrow.parquet as pq
    except ImportError as e:
        raise DataError(f"{path}: reading Parquet needs pyarrow (pip install pyarrow), or convert the file to JSONL") \
            from e
    try:
        rows = pq.read_table(path).to_pylist()
    except Exception as e:
        raise DataError(f"{path}: cannot read Parquet: {type(e).__name__}: {e}") from e
    return [(row, i + 1) for i, row in enumerate(rows)]


def read_rows(path: str) -> list[tuple[Any, int]]:
    """(row, line) pairs of a .jsonl / .json / .parquet file."""
    expanded = os.path.expanduser(path)
    if not os.path.isfile(expanded):
        raise DataError(f"data file not found: {path}")
    if expanded.endswith(".parquet"):
        return _read_parquet_rows(expanded)
    if expanded.endswith((".jsonl", ".json")):
        return _read_json_rows(expanded)
    raise DataError(f"Unsupported file format: {path} (expected .jsonl, .json or .parquet)")


def check_messages(messages: Any, key: str, origin: RowOrigin) -> None:
    """DataError naming ``origin`` unless ``messages`` is a non-empty list of ``{'role', 'content'}`` dicts."""
    if (not isinstance(messages, list) or not messages
            or not all(isinstance(m, dict) and "role" in m and "content" in m for m in messages)):
        raise DataError(f"{origin}: '{key}' must be a non-empty list of {{'role', 'content'}} messages, got "
                        f"{str(messages)[:100]!r}")


def render_chat(tokenizer: Any, messages: list[dict], chat_template_kwargs: dict, origin: RowOrigin,
                add_generation_prompt: bool = True) -> str:
    """``messages`` rendered by the tokenizer's chat template; DataError naming ``origin`` when it fails."""
    try:
        return tokenizer.apply_chat_template(messages, add_generation_prompt=add_generation_prompt, tokenize=False,
                                             **chat_template_kwargs)
    except Exception as e:
        raise DataError(f"{origin}: chat template failed: {type(e).__name__}: {e}") from e


def render_prompt(tokenizer: Any, messages: list[dict], chat_template_kwargs: dict,
                  origin: RowOrigin) -> tuple[str, list[int]]:
    """An RL prompt as the rollout sees it: the chat template with the generation prompt, encoded without
    special tokens. Returns (text, ids). The SFT dataset renders its prompts with this too, so a model
    warm-started by SFT sees exactly the prompts RL gives it."""
    text = render_chat(tokenizer, messages, chat_template_kwargs, origin, add_generation_prompt=True)
    return text, list(tokenizer.encode(text, add_special_tokens=False))


def select_max_samples(total: int, max_samples: int, shuffle: bool, seed: Any) -> list[int]:
    """verl's ``max_samples``: all rows when ``max_samples`` is not in (0, total), else the first ones or, with
    ``shuffle``, a seeded random choice (numpy ``default_rng(seed).choice``)."""
    if not 0 < max_samples < total:
        return list(range(total))
    if shuffle:
        rng = np.random.default_rng(*((seed,) if seed is not None else ()))
        return rng.choice(total, size=max_samples, replace=False).tolist()
    return list(range(max_samples))


class RLHFDataset:
    """Prompts for RL from JSONL / JSON / Parquet files in verl's schema.

    Args:
        data_files: a path or list of paths (rows are concatenated in order).
        tokenizer: a ``verl.Tokenizer`` (or any object with ``apply_chat_template``, ``encode``,
            ``pad_token_id`` / ``eos_token_id``).
        config: the ``data`` section (a ``verl.Config`` node or dict): ``prompt_key``, ``max_prompt_length``,
            ``truncation``, ``filter_overlong_prompts``, ``return_raw_chat``, ``return_full_prompt``,
            ``apply_chat_template_kwargs``, ``reward_fn_key``.
        max_samples: keep only this many rows (-1: all); the first ones, or a seeded random choice when
            ``config.shuffle`` (as verl).

    Raises ``verl.DataError`` naming ``file:line`` for a row that is not an object, lacks ``prompt`` (chat messages)
    or ``reward_model.ground_truth``; ``verl.ConfigError`` for a bad truncation mode.
    """

    def __init__(self, data_files: str | os.PathLike | Sequence[str | os.PathLike], tokenizer: Any, config: Any = None,
                 processor: Any = None, max_samples: int = -1) -> None:
        if processor is not None:
            raise ConfigError("RLHFDataset: multimodal processors are not supported by verl-cpp")
        if isinstance(data_files, (str, os.PathLike)):
            data_files = [data_files]
        self.data_files = [os.fspath(p) for p in data_files]
        self.tokenizer = tokenizer
        self.config = config
        self.max_samples = max_samples
        self.prompt_key = _cfg(config, "prompt_key", "prompt")
        self.reward_fn_key = _cfg(config, "reward_fn_key", "data_source")
        self.max_prompt_length = int(_cfg(config, "max_prompt_length", 1024))
        self.truncation = _cfg(config, "truncation", "error")
        self.filter_overlong_prompts = bool(_cfg(config, "filter_overlong_prompts", False))
        self.return_raw_chat = bool(_cfg(config, "return_raw_chat", False))
        self.return_full_prompt = bool(_cfg(config, "return_full_prompt", False))
        self.apply_chat_template_kwargs = dict(_cfg(config, "apply_chat_template_kwargs", {}))
        self.shuffle = bool(_cfg(config, "shuffle", False))
        self.seed = _cfg(config, "seed", None)
        if self.truncation not in TRUNCATION_MODES:
            raise ConfigError(f"data.truncation must be one of {list(TRUNCATION_MODES)}, got {self.truncation!r}")
        if self.max_prompt_length <= 0:
            raise ConfigError(f"data.max_prompt_length must be positive, got {self.max_prompt_length}")
        pad = getattr(tokenizer, "pad_token_id", None)
        self.pad_token_id = pad if pad is not None else (getattr(tokenizer, "eos_token_id", None) or 0)

        self.rows: list[dict] = []
        self.origins: list[RowOrigin] = []
        for path in self.data_files:
            for row, line in read_rows(path):
                origin = RowOrigin(path, line)
                self._check_row(row, origin)
                self.rows.append(row)
                self.origins.append(origin)
        self._select_max_samples()
        if self.filter_overlong_prompts:
            keep = [i for i in range(len(self.rows)) if len(self.prompt_ids(i)[1]) <= self.max_prompt_length]
            self.rows = [self.rows[i] for i in keep]
            self.origins = [self.origins[i] for i in keep]

    # -- loading ----------------------------------------------------------------------------------
    def _check_row(self, row: Any, origin: RowOrigin) -> None:
        if not isinstance(row, dict):
            raise DataError(f"{origin}: a row must be an object, got {type(row).__name__}")
        messages = row.get(self.prompt_key)
        if messages is None:
            raise DataError(f"{origin}: row has no '{self.prompt_key}' (chat messages) field")
        check_messages(messages, self.prompt_key, origin)
        reward_model = row.get("reward_model")
        if not isinstance(reward_model, dict) or reward_model.get("ground_truth") is None:
            raise DataError(f"{origin}: row has no 'reward_model.ground_truth'")
        extra = row.get("extra_info")
        if extra is not None and not isinstance(extra, dict):
            raise DataError(f"{origin}: 'extra_info' must be an object, got {type(extra).__name__}")

    def _select_max_samples(self) -> None:
        indices = select_max_samples(len(self.rows), self.max_samples, self.shuffle, self.seed)
        self.rows = [self.rows[i] for i in indices]
        self.origins = [self.origins[i] for i in indices]

    # -- access -----------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.rows)

    def prompt_ids(self, item: int) -> tuple[str, list[int]]:
        """(the rendered prompt, its token ids before truncation) of row ``item``."""
        return render_prompt(self.tokenizer, self.rows[item][self.prompt_key], self.apply_chat_template_kwargs,
                             self.origins[item])

    def truncate(self, ids: list[int], item: int) -> list[int]:
        """``ids`` cut to max_prompt_length by the truncation mode (``error``: DataError naming the row)."""
        limit = self.max_prompt_length
        if len(ids) <= limit:
            return ids
        if self.truncation == "left":
            return ids[-limit:]
        if self.truncation == "right":
            return ids[:limit]
        if self.truncation == "middle":
            left_half = limit // 2
            right_half = limit - left_half
            return ids[:left_half] + ids[-right_half:]
        raise DataError(f"{self.origins[item]}: prompt length {len(ids)} is longer than data.max_prompt_length={limit} "
                        "(set data.truncation=left|right|middle or data.filter_overlong_prompts=true)")

    def __getitem__(self, item: int) -> dict:
        if not -len(self) <= item < len(self):
            raise IndexError(f"RLHFDataset index {item} out of range for {len(self)} rows")
        item = item % len(self)
        row = dict(self.rows[item])
        messages = row.pop(self.prompt_key)
        text, ids = self.prompt_ids(item)
        kept = self.truncate(ids, item)
        pad = self.max_prompt_length - len(kept)
        input_ids = torch.tensor([self.pad_token_id] * pad + kept, dtype=torch.long)
        attention_mask = torch.tensor([0] * pad + [1] * len(kept), dtype=torch.long)
        row["input_ids"] = input_ids
        row["attention_mask"] = attention_mask
        row["position_ids"] = compute_position_id_with_mask(attention_mask)
        row["raw_prompt_ids"] = kept
        if self.return_raw_chat:
            row["raw_prompt"] = messages
        if self.return_full_prompt:
            row["full_prompts"] = text
        extra = row.get("extra_info")
        if extra is None:
            extra = row["extra_info"] = {}
        row["index"] = extra.get("index", 0)
        row["tools_kwargs"] = extra.get("tools_kwargs", {})
        row["interaction_kwargs"] = extra.get("interaction_kwargs", {})
        return row

    def origin(self, item: int) -> str:
        """``file:line`` of row ``item``."""
        return str(self.origins[item])

    def __repr__(self) -> str:
        return f"RLHFDataset({len(self)} rows from {self.data_files}, max_prompt_length={self.max_prompt_length})"



def create_rl_dataset(data_paths: str | Sequence[str], data_config: Any, tokenizer: Any, processor: Any = None,
                      is_train: bool = True, max_samples: int | None = None) -> Any:
    """verl's ``create_rl_dataset`` (main_ppo): ``data.custom_cls.path/name`` when configured (a class taking
    ``data_files, tokenizer, config, processor, max_samples``), else ``RLHFDataset``; ``max_samples`` defaults to
    ``data.train_max_samples`` / ``data.val_max_samples``."""
    custom_path = _cfg(data_config, "custom_cls", {}).get("path")
    if custom_path:
        from ...trainer.ppo.reward import load_extern_object

        dataset_cls = load_extern_object(custom_path, _cfg(data_config, "custom_cls", {}).get("name"))
        if not isinstance(dataset_cls, type):
            raise ConfigError(f"data.custom_cls '{custom_path}' names {dataset_cls!r}, not a class")
    else:
        dataset_cls = RLHFDataset
    if max_samples is None:
        max_samples = int(_cfg(data_config, "train_max_samples" if is_train else "val_max_samples", -1))
    return dataset_cls(data_files=data_paths, tokenizer=tokenizer, config=data_config, processor=processor,
                       max_samples=max_samples)
