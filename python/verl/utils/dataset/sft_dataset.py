"""SFT datasets (verl's ``verl.utils.dataset`` SFT / multi-turn SFT datasets): token ids and a loss mask per row.

A row is a JSON object (JSONL / JSON files) or a Parquet record in one of two forms::

    {"prompt": "Compute 3+4.", "response": "7"}                          # data.prompt_key / data.response_key
    {"prompt": [{"role": "user", "content": "Compute 3+4."}], "response": "7"}
    {"messages": [{"role": "system", ...}, {"role": "user", ...},        # data.messages_key
                  {"role": "assistant", ...}, ...]}

Prompt/response rows: the prompt (a string is one user message) is rendered by the tokenizer's chat template
with the generation prompt and encoded exactly as the RL dataset renders RL prompts
(``rl_dataset.render_prompt``), so the SFT warm start trains on the prompts the rollout will see; the response is
encoded without special tokens and followed by EOS. The response tokens and EOS are the targets (loss_mask 1).

Chat rows: the conversation is rendered turn by turn with the chat template; each assistant turn's text after
its generation prompt (its content and the template's end-of-turn tokens) is a target, everything else
(system, user and tool turns, the generation prompts) is context. The template must render a conversation
incrementally (each prefix's text starts the next one), as chat templates do; one that rewrites earlier turns
is a ``DataError`` naming the row.

Rows longer than ``data.max_length`` tokens follow ``data.truncation``: ``error`` (a ``verl.DataError`` naming
``file:line``), ``left`` (keep the end), ``right`` (keep the start). A row left without any target is an error
too. ``SFTDataset[i]`` gives ``{"input_ids", "loss_mask"}`` (1-D int64); ``collate_sft`` right-pads rows into
``input_ids`` / ``attention_mask`` / ``loss_mask`` (bs, longest row) for ``verl._C.trainer.SFTTrainer``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import torch

from ...errors import ConfigError, DataError
from .reader import RowOrigin, read_rows
from .rl_dataset import (_cfg_bool, _cfg_int, _cfg_mapping, _cfg_seed, _cfg_str, check_int, check_messages, render_chat,
                         render_prompt, select_max_samples)

__all__ = ["SFTDataset", "LossMaskedRows", "collate_sft", "truncate_row", "SFT_TRUNCATION_MODES"]

SFT_TRUNCATION_MODES = ("error", "left", "right")


def collate_sft(rows: Sequence[dict], pad_token_id: int = 0) -> dict[str, torch.Tensor]:
    """Right-pads rows of 1-D ``input_ids`` / ``loss_mask`` (and optional ``attention_mask``) to the longest row:
    ``input_ids`` (bs, L) int64 padded with ``pad_token_id``, ``attention_mask`` and ``loss_mask`` (bs, L) int64,
    0 on padding."""
    if not rows:
        raise DataError("collate_sft: empty batch")
    for i, row in enumerate(rows):
        for key in ("input_ids", "loss_mask"):
            if key not in row:
                raise DataError(f"collate_sft: row {i} has no '{key}' (SFT rows need input_ids and loss_mask)")
        if row["input_ids"].dim() != 1 or row["loss_mask"].shape != row["input_ids"].shape:
            raise DataError(f"collate_sft: row {i}: input_ids {tuple(row['input_ids'].shape)} and loss_mask "
                            f"{tuple(row['loss_mask'].shape)} must be 1-D of the same length")
    longest = max(int(row["input_ids"].numel()) for row in rows)
    input_ids = torch.full((len(rows), longest), int(pad_token_id), dtype=torch.long)
    attention_mask = torch.zeros((len(rows), longest), dtype=torch.long)
    loss_mask = torch.zeros((len(rows), longest), dtype=torch.long)
    for i, row in enumerate(rows):
        n = int(row["input_ids"].numel())
        input_ids[i, :n] = row["input_ids"]
        attention_mask[i, :n] = row["attention_mask"] if "attention_mask" in row else 1
        loss_mask[i, :n] = row["loss_mask"]
    return {"input_ids": input_ids, "attention_mask": attention_mask, "loss_mask": loss_mask}


def truncate_row(ids: list[int], mask: list[int], max_length: int, truncation: str,
                 origin: Any) -> tuple[list[int], list[int]]:
    """A tokenized row cut to ``max_length`` tokens per ``truncation`` (``error``: a DataError naming ``origin``,
    ``left``: keep the end, ``right``: keep the start); a DataError too when no target (loss_mask 1 after the first
    token) is left. Shared by the SFT and preference datasets."""
    if len(ids) > max_length:
        if truncation == "error":
            raise DataError(f"{origin}: row has {len(ids)} tokens, more than data.max_length={max_length} (set "
                            "data.truncation=left|right, or raise data.max_length)")
        keep = slice(-max_length, None) if truncation == "left" else slice(0, max_length)
        ids, mask = ids[keep], mask[keep]
    if not any(mask[1:]):
        raise DataError(f"{origin}: no response token is left to train on within data.max_length={max_length} "
                        f"(data.truncation={truncation})")
    return ids, mask


class LossMaskedRows:
    """What the SFT and preference datasets share: the ``data`` section's prompt and length keys, the tokenizer's EOS
    and pad tokens, and the rows of the data files with their ``file:line`` origins (``max_samples`` applied)."""

    def _read_rows(self, data_files: str | os.PathLike | Sequence[str | os.PathLike], tokenizer: Any, config: Any,
                   max_samples: int, eos_use: str) -> list[tuple[Any, RowOrigin]]:
        if isinstance(data_files, (str, os.PathLike)):
            data_files = [data_files]
        self.data_files = [os.fspath(p) for p in data_files]
        self.tokenizer = tokenizer
        self.prompt_key = _cfg_str(config, "prompt_key", "prompt")
        self.max_length = _cfg_int(config, "max_length", 1024, minimum=1)
        self.truncation = _cfg_str(config, "truncation", "error", choices=SFT_TRUNCATION_MODES)
        self.apply_chat_template_kwargs = _cfg_mapping(config, "apply_chat_template_kwargs")
        max_samples = check_int("max_samples", max_samples)
        shuffle = _cfg_bool(config, "shuffle", False)
        seed = _cfg_seed(config)
        self.eos_token_id = getattr(tokenizer, "eos_token_id", None)
        if self.eos_token_id is None:
            raise ConfigError(f"{type(self).__name__}: the tokenizer has no EOS token (eos_token in "
                              f"tokenizer_config.json); {eos_use}")
        pad = getattr(tokenizer, "pad_token_id", None)
        self.pad_token_id = int(pad if pad is not None else self.eos_token_id)

        rows: list[tuple[Any, RowOrigin]] = []
        for path in self.data_files:
            rows.extend((row, RowOrigin(path, line)) for row, line in read_rows(path))
        keep = select_max_samples(len(rows), max_samples, shuffle, seed)
        self.origins: list[RowOrigin] = [rows[i][1] for i in keep]
        return [rows[i] for i in keep]

    def _encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False)) if text else []

    def _prompt_messages(self, prompt: Any, origin: RowOrigin) -> list[dict]:
        """A row's prompt as chat messages: a string is one user message."""
        if isinstance(prompt, str):
            return [{"role": "user", "content": prompt}]
        check_messages(prompt, self.prompt_key, origin)
        return prompt

    def origin(self, item: int) -> str:
        """``file:line`` of row ``item``."""
        return str(self.origins[item])


class SFTDataset(LossMaskedRows):
    """SFT rows from JSONL / JSON / Parquet files, tokenized once when loaded.

    Args:
        data_files: a path or list of paths (rows are concatenated in order).
        tokenizer: a ``verl.Tokenizer`` (or any object with ``apply_chat_template``, ``encode``, ``eos_token_id``).
        config: the ``data`` section (a ``verl.Config`` node or dict): ``messages_key``, ``prompt_key``,
            ``response_key``, ``max_length``, ``truncation``, ``apply_chat_template_kwargs``, ``shuffle``, ``seed``.
        max_samples: keep only this many rows (-1: all); the first ones, or a seeded random choice when
            ``config.shuffle`` (as verl).

    Raises ``verl.DataError`` naming ``file:line`` for a file that is not UTF-8 or not JSON (or nests deeper than
    128 levels, or holds a lone surrogate: see ``reader``), for a row that is not an object, has neither chat
    messages nor a prompt and a string response, whose chat messages are malformed or hold no assistant turn, or
    that is longer than ``max_length`` under ``truncation=error``; ``verl.ConfigError`` naming the key for a
    config value of the wrong type or range (truncation mode, max_length, seed, ...), or a tokenizer without an EOS
    token.
    """

    def __init__(self, data_files: str | os.PathLike | Sequence[str | os.PathLike], tokenizer: Any,
                 config: Any = None, max_samples: int = -1) -> None:
        self.messages_key = _cfg_str(config, "messages_key", "messages")
        self.response_key = _cfg_str(config, "response_key", "response")
        rows = self._read_rows(data_files, tokenizer, config, max_samples, "the response targets end with it")
        self.input_ids: list[torch.Tensor] = []
        self.loss_masks: list[torch.Tensor] = []
        for row, origin in rows:
            ids, mask = self._tokenize(row, origin)
            self.input_ids.append(torch.tensor(ids, dtype=torch.long))
            self.loss_masks.append(torch.tensor(mask, dtype=torch.long))

    # -- tokenization -----------------------------------------------------------------------------
    def _tokenize(self, row: Any, origin: RowOrigin) -> tuple[list[int], list[int]]:
        if not isinstance(row, dict):
            raise DataError(f"{origin}: a row must be an object, got {type(row).__name__}")
        if row.get(self.messages_key) is not None:
            ids, mask = self._chat_row(row[self.messages_key], origin)
        elif row.get(self.prompt_key) is not None or row.get(self.response_key) is not None:
            ids, mask = self._prompt_response_row(row, origin)
        else:
            raise DataError(f"{origin}: row has neither '{self.messages_key}' (chat messages) nor "
                            f"'{self.prompt_key}' + '{self.response_key}' (keys: {sorted(row)[:10]})")
        return self._truncate(ids, mask, origin)

    def _prompt_response_row(self, row: dict, origin: RowOrigin) -> tuple[list[int], list[int]]:
        prompt = row.get(self.prompt_key)
        response = row.get(self.response_key)
        if prompt is None:
            raise DataError(f"{origin}: row has '{self.response_key}' but no '{self.prompt_key}'")
        if response is None:
            raise DataError(f"{origin}: row has '{self.prompt_key}' but no '{self.response_key}'")
        messages = self._prompt_messages(prompt, origin)
        if not isinstance(response, str):
            raise DataError(f"{origin}: '{self.response_key}' must be a string, got {type(response).__name__}")
        _, prompt_ids = render_prompt(self.tokenizer, messages, self.apply_chat_template_kwargs, origin)
        response_ids = self._encode(response) + [int(self.eos_token_id)]
        return prompt_ids + response_ids, [0] * len(prompt_ids) + [1] * len(response_ids)

    def _chat_row(self, messages: Any, origin: RowOrigin) -> tuple[list[int], list[int]]:
        check_messages(messages, self.messages_key, origin)
        if not any(m["role"] == "assistant" for m in messages):
            raise DataError(f"{origin}: '{self.messages_key}' has no assistant turn to train on")
        if messages[0]["role"] == "assistant":
            raise DataError(f"{origin}: '{self.messages_key}' starts with an assistant turn; it needs a prompt "
                            "before it")
        kwargs = self.apply_chat_template_kwargs
        ids: list[int] = []
        mask: list[int] = []

        def add(text: str, target: bool) -> None:
            piece = self._encode(text)
            ids.extend(piece)
            mask.extend([int(target)] * len(piece))

        def prefix_of(prefix: str, text: str, turn: int) -> None:
            if not text.startswith(prefix):
                raise DataError(f"{origin}: the chat template does not render '{self.messages_key}' incrementally (the "
                                f"text up to turn {turn} is not a prefix of the text with turn {turn + 1}), so the "
                                "assistant turns cannot be located")

        rendered = ""  # the conversation so far, as the template renders it
        for turn, message in enumerate(messages):
            full = render_chat(self.tokenizer, messages[:turn + 1], kwargs, origin, add_generation_prompt=False)
            if message["role"] == "assistant":
                head = render_chat(self.tokenizer, messages[:turn], kwargs, origin, add_generation_prompt=True)
                prefix_of(rendered, head, turn)
                prefix_of(head, full, turn)
                add(head[len(rendered):], False)
                add(full[len(head):], True)
            else:
                prefix_of(rendered, full, turn)
                add(full[len(rendered):], False)
            rendered = full
        return ids, mask

    def _truncate(self, ids: list[int], mask: list[int], origin: RowOrigin) -> tuple[list[int], list[int]]:
        return truncate_row(ids, mask, self.max_length, self.truncation, origin)

    # -- access -----------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.input_ids)

    def __getitem__(self, item: int) -> dict[str, torch.Tensor]:
        if not -len(self) <= item < len(self):
            raise IndexError(f"SFTDataset index {item} out of range for {len(self)} rows")
        return {"input_ids": self.input_ids[item], "loss_mask": self.loss_masks[item]}

    def collate_fn(self, rows: Sequence[dict]) -> dict[str, torch.Tensor]:
        """``collate_sft`` with this dataset's pad token."""
        return collate_sft(rows, self.pad_token_id)

    def __repr__(self) -> str:
        return f"SFTDataset({len(self)} rows from {self.data_files}, max_length={self.max_length})"
