"""RL prompt datasets in verl's schema (verl's ``verl.utils.dataset.rl_dataset``).

A row is a JSON object (JSONL / JSON files) or a Parquet record::

    {"data_source": "openai/gsm8k",
     "prompt": [{"role": "user", "content": "..."}],          # data.prompt_key, chat messages
     "reward_model": {"style": "rule", "ground_truth": "72"},
     "extra_info": {"index": 0, ...}, ...}

The ground truth may sit in ``extra_info.ground_truth`` instead (the tutorials' rows): it is moved to
``reward_model`` (``{"style": "rule", "ground_truth": ...}``) when the row is loaded. ``RLHFDataset.from_rows`` takes
rows already in memory (a trainer's ``step(rows)``, an environment's prompts); there the ground truth may be absent
(``None``: a reward function that does not read it).

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

import numbers
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from ...errors import ConfigError, ConfigTypeError, DataError, InvalidArgumentError
from ...protocol import DataProto
from .reader import RowOrigin, read_rows

__all__ = ["RLHFDataset", "create_rl_dataset", "collate_fn", "collate_to_dataproto", "compute_position_id_with_mask",
           "TRUNCATION_MODES", "RowOrigin", "read_rows", "check_messages", "check_row", "render_chat", "render_prompt",
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


def _cfg(config: Any, key: str, default: Any) -> Any:
    if config is None:
        return default
    value = config.get(key, default) if hasattr(config, "get") else getattr(config, key, default)
    if hasattr(value, "to_dict"):
        value = value.to_dict()
    return default if value is None else value


# -- config values, type-checked -------------------------------------------------------------------------
# The data section may be a plain dict that nothing validated: every value the datasets use is checked here, so a
# wrong one is a ConfigError naming its key rather than a TypeError deep inside numpy or torch (a fuzzer found
# ``{"shuffle": True, "seed": "x"}`` failing in numpy's default_rng).

def _shown(value: Any) -> str:
    text = repr(value)  # repr escapes what cannot be printed (lone surrogates, control characters)
    return f"{type(value).__name__} {text if len(text) <= 80 else text[:77] + '...'}"


def check_int(name: str, value: Any, minimum: int | None = None) -> int:
    """``value`` as an int; ConfigTypeError naming ``name`` unless it is an integer (bool is not), ConfigError
    when below ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ConfigTypeError(f"{name} must be an integer, got {_shown(value)}")
    if minimum is not None and value < minimum:
        raise ConfigError(f"{name} must be at least {minimum}, got {int(value)}")
    return int(value)


# The seeds torch's Generator.manual_seed takes (the loaders); numpy's default_rng takes those >= 0 only.
TORCH_SEED_MIN = -(2**63)


def check_seed(name: str, value: Any, minimum: int = 0) -> int | None:
    """A seed: None, or an integer in [minimum, 2**64); ConfigTypeError / ConfigError naming ``name`` otherwise."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ConfigTypeError(f"{name} must be an integer or null, got {_shown(value)}")
    if not minimum <= value < 2**64:
        raise ConfigError(f"{name} must be an integer in [{minimum}, 2**64), got {int(value)}")
    return int(value)


def check_bool(name: str, value: Any) -> bool:
    """``value`` as a bool; ConfigTypeError naming ``name`` unless it is one (``bool("false")`` is True)."""
    if not isinstance(value, (bool, np.bool_)):
        raise ConfigTypeError(f"{name} must be true or false, got {_shown(value)}")
    return bool(value)


def _cfg_int(config: Any, key: str, default: int, minimum: int | None = None) -> int:
    return check_int(f"data.{key}", _cfg(config, key, default), minimum)


def _cfg_bool(config: Any, key: str, default: bool) -> bool:
    return check_bool(f"data.{key}", _cfg(config, key, default))


def _cfg_seed(config: Any, minimum: int = TORCH_SEED_MIN) -> int | None:
    return check_seed("data.seed", _cfg(config, "seed", None), minimum)


def _cfg_str(config: Any, key: str, default: str, choices: Sequence[str] | None = None) -> str:
    value = _cfg(config, key, default)
    if not isinstance(value, str) or not value:
        raise ConfigTypeError(f"data.{key} must be a non-empty string, got {_shown(value)}")
    if choices is not None and value not in choices:
        raise ConfigError(f"data.{key} must be one of {list(choices)}, got {value!r}")
    return value


def _cfg_mapping(config: Any, key: str) -> dict:
    value = _cfg(config, key, {})
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise ConfigTypeError(f"data.{key} must be a mapping of keyword arguments, got {_shown(value)}")
    return dict(value)


def _tool_schemas(config: Any) -> list[dict] | None:
    """verl's data.tool_config_path / data.function_tool_path (by default the rollout's multi_turn keys): the tools'
    OpenAI schemas, or None."""
    paths = {key: _cfg(config, key, None) for key in ("tool_config_path", "function_tool_path")}
    for key, value in paths.items():
        if value is not None and not isinstance(value, (str, os.PathLike)):
            raise ConfigTypeError(f"data.{key} must be a path or null, got {_shown(value)}")
    if not any(paths.values()):
        return None
    from ...tools.tool_registry import load_all_tools

    try:
        tools = load_all_tools(paths["tool_config_path"], paths["function_tool_path"])
    except (OSError, ImportError, ValueError, TypeError) as e:
        raise ConfigError(f"data.tool_config_path={paths['tool_config_path']!r} / data.function_tool_path="
                          f"{paths['function_tool_path']!r}: {type(e).__name__}: {e}") from e
    return [tool.tool_schema.model_dump(exclude_unset=True, exclude_none=True) for tool in tools]


def check_messages(messages: Any, key: str, origin: RowOrigin) -> None:
    """DataError naming ``origin`` unless ``messages`` is a non-empty list of ``{'role', 'content'}`` dicts."""
    if (not isinstance(messages, list) or not messages
            or not all(isinstance(m, dict) and "role" in m and "content" in m for m in messages)):
        raise DataError(f"{origin}: '{key}' must be a non-empty list of {{'role', 'content'}} messages, got "
                        f"{str(messages)[:100]!r}")


def check_row(row: Any, origin: RowOrigin, prompt_key: str = "prompt", require_ground_truth: bool = True) -> dict:
    """A row in verl's schema: DataError naming ``origin`` unless it is an object with chat messages under
    ``prompt_key`` and an ``extra_info`` object (if any). The ground truth is ``reward_model.ground_truth`` or, moved
    there in the returned copy, ``extra_info.ground_truth``; without either the row is an error when
    ``require_ground_truth``, else its ``reward_model.ground_truth`` is None. The row itself is not changed."""
    if not isinstance(row, dict):
        raise DataError(f"{origin}: a row must be an object, got {type(row).__name__}")
    messages = row.get(prompt_key)
    if messages is None:
        raise DataError(f"{origin}: row has no '{prompt_key}' (chat messages) field")
    check_messages(messages, prompt_key, origin)
    extra = row.get("extra_info")
    if extra is not None and not isinstance(extra, dict):
        raise DataError(f"{origin}: 'extra_info' must be an object, got {type(extra).__name__}")
    reward_model = row.get("reward_model")
    if isinstance(reward_model, dict) and reward_model.get("ground_truth") is not None:
        return row
    if reward_model is not None and not isinstance(reward_model, dict):
        raise DataError(f"{origin}: 'reward_model' must be an object, got {type(reward_model).__name__}")
    ground_truth = extra.get("ground_truth") if extra is not None else None
    if ground_truth is None and require_ground_truth:
        raise DataError(f"{origin}: row has no 'reward_model.ground_truth' (nor 'extra_info.ground_truth')")
    return {**row, "reward_model": {"style": "rule", **(reward_model or {}), "ground_truth": ground_truth}}


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
    try:
        return text, list(tokenizer.encode(text, add_special_tokens=False))
    # A lone surrogate that did not come from a data file (read_rows refuses those): a transformers tokenizer raises
    # UnicodeEncodeError, verl-cpp's an InvalidArgumentError naming the text.
    except UnicodeEncodeError as e:
        raise DataError(f"{origin}: the rendered prompt is not valid Unicode text ({e.reason}: "
                        f"{e.object[e.start:e.end]!r})") from e
    except InvalidArgumentError as e:
        raise DataError(f"{origin}: the rendered prompt is not valid Unicode text ({e})") from e


def select_max_samples(total: int, max_samples: int, shuffle: bool, seed: int | None) -> list[int]:
    """verl's ``max_samples``: all rows when ``max_samples`` is not in (0, total), else the first ones or, with
    ``shuffle``, a seeded random choice (numpy ``default_rng(seed).choice``)."""
    max_samples = check_int("max_samples", max_samples)
    if not 0 < max_samples < total:
        return list(range(total))
    if shuffle:
        seed = check_seed("data.seed", seed)  # numpy refuses negative seeds with a ValueError
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
            ``apply_chat_template_kwargs``, ``reward_fn_key``, ``shuffle``, ``seed``.
        max_samples: keep only this many rows (-1: all); the first ones, or a seeded random choice when
            ``config.shuffle`` (as verl).

    Raises ``verl.DataError`` naming ``file:line`` for a file that is not UTF-8 or not JSON (or nests deeper than
    128 levels, or holds a lone surrogate: see ``reader``), and for a row that is not an object, lacks ``prompt``
    (chat messages) or a ground truth (``reward_model.ground_truth`` or ``extra_info.ground_truth``);
    ``verl.ConfigError`` naming the key for a config value of
    the wrong type or range (a truncation mode, a seed, a flag that is not a bool, ...).
    """

    def __init__(self, data_files: str | os.PathLike | Sequence[str | os.PathLike], tokenizer: Any, config: Any = None,
                 processor: Any = None, max_samples: int = -1) -> None:
        if processor is not None:
            raise ConfigError("RLHFDataset: multimodal processors are not supported by verl-cpp")
        if isinstance(data_files, (str, os.PathLike)):
            data_files = [data_files]
        self.data_files = [os.fspath(p) for p in data_files]
        self._configure(tokenizer, config, max_samples)
        loaded = [(row, RowOrigin(path, line)) for path in self.data_files for row, line in read_rows(path)]
        self._load(loaded, require_ground_truth=True)

    @classmethod
    def from_rows(cls, rows: Sequence[Any], tokenizer: Any, config: Any = None, source: str = "rows",
                  max_samples: int = -1) -> RLHFDataset:
        """A dataset over rows already in memory (dicts in verl's schema), named ``source:<1-based index>`` in
        errors; a row without a ground truth gets ``reward_model.ground_truth = None``."""
        if isinstance(rows, (str, bytes, Mapping)) or not isinstance(rows, Sequence):
            raise DataError(f"{source}: expected a list of rows (dicts in verl's schema), got {type(rows).__name__}")
        self = cls.__new__(cls)
        self.data_files = []
        self._configure(tokenizer, config, max_samples)
        self._load([(row, RowOrigin(source, i + 1)) for i, row in enumerate(rows)], require_ground_truth=False)
        return self

    def _configure(self, tokenizer: Any, config: Any, max_samples: int) -> None:
        self.tokenizer = tokenizer
        self.config = config
        self.max_samples = check_int("max_samples", max_samples)
        self.prompt_key = _cfg_str(config, "prompt_key", "prompt")
        self.reward_fn_key = _cfg_str(config, "reward_fn_key", "data_source")
        self.max_prompt_length = _cfg_int(config, "max_prompt_length", 1024, minimum=1)
        self.truncation = _cfg_str(config, "truncation", "error", choices=TRUNCATION_MODES)
        self.filter_overlong_prompts = _cfg_bool(config, "filter_overlong_prompts", False)
        self.return_raw_chat = _cfg_bool(config, "return_raw_chat", False)
        self.return_full_prompt = _cfg_bool(config, "return_full_prompt", False)
        self.apply_chat_template_kwargs = _cfg_mapping(config, "apply_chat_template_kwargs")
        self.tool_schemas = _tool_schemas(config)
        self.shuffle = _cfg_bool(config, "shuffle", False)
        self.seed = _cfg_seed(config)
        pad = getattr(tokenizer, "pad_token_id", None)
        self.pad_token_id = pad if pad is not None else (getattr(tokenizer, "eos_token_id", None) or 0)

    # -- loading ----------------------------------------------------------------------------------
    def _load(self, loaded: list[tuple[Any, RowOrigin]], require_ground_truth: bool) -> None:
        self.rows: list[dict] = [check_row(row, origin, self.prompt_key, require_ground_truth) for row, origin in loaded]
        self.origins: list[RowOrigin] = [origin for _, origin in loaded]
        self._select_max_samples()
        if self.filter_overlong_prompts:
            keep = [i for i in range(len(self.rows)) if self._filter_length(i) <= self.max_prompt_length]
            self.rows = [self.rows[i] for i in keep]
            self.origins = [self.origins[i] for i in keep]

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

    def _filter_length(self, item: int) -> int:
        """The prompt length filter_overlong_prompts compares, as verl's: with data.tool_config_path /
        function_tool_path, the prompt rendered with those tools' schemas (as tool_agent renders it)."""
        if not self.tool_schemas:
            return len(self.prompt_ids(item)[1])
        kwargs = {**self.apply_chat_template_kwargs, "tools": self.tool_schemas}
        return len(render_prompt(self.tokenizer, self.rows[item][self.prompt_key], kwargs, self.origins[item])[1])

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
    custom_cls = _cfg_mapping(data_config, "custom_cls")
    custom_path = custom_cls.get("path")
    if custom_path:
        from ...trainer.ppo.reward import load_extern_object

        dataset_cls = load_extern_object(custom_path, custom_cls.get("name"))
        if not isinstance(dataset_cls, type):
            raise ConfigError(f"data.custom_cls '{custom_path}' names {dataset_cls!r}, not a class")
    else:
        dataset_cls = RLHFDataset
    if max_samples is None:
        max_samples = _cfg_int(data_config, "train_max_samples" if is_train else "val_max_samples", -1)
    return dataset_cls(data_files=data_paths, tokenizer=tokenizer, config=data_config, processor=processor,
                       max_samples=max_samples)
