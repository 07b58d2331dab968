"""Preference datasets for DPO: each row a prompt with a chosen and a rejected completion, tokenized into the two
sequences of a pair with a loss mask on the completion tokens.

A row is a JSON object (JSONL / JSON files) or a Parquet record, TRL's preference schema::

    {"prompt": "Compute 3+4.", "chosen": "7", "rejected": "8"}                     # text completions
    {"prompt": [{"role": "user", "content": "Compute 3+4."}],                       # chat messages
     "chosen": [{"role": "assistant", "content": "7"}],
     "rejected": [{"role": "assistant", "content": "8"}]}

The prompt (``data.prompt_key``; a string is one user message) is rendered by the tokenizer's chat template with the
generation prompt and encoded exactly as the RL and SFT datasets render prompts (``rl_dataset.render_prompt``). A
text completion is encoded without special tokens and followed by EOS, as an SFT response. A message completion
(a non-empty list of messages starting with an assistant turn) is rendered with the prompt by the chat template;
its text after the rendered prompt (content and the template's end-of-turn tokens) is the completion. The
completion tokens are the targets (loss_mask 1).

Each sequence longer than ``data.max_length`` tokens follows ``data.truncation`` as in the SFT dataset. Bad rows
(not an object, a missing or empty ``chosen`` / ``rejected``, wrong types, malformed messages) are a
``verl.DataError`` naming ``file:line``. ``PreferenceDataset[i]`` gives the pair's ``chosen_input_ids``,
``chosen_loss_mask``, ``rejected_input_ids``, ``rejected_loss_mask`` (1-D int64); ``collate_preference`` right-pads
a list of pairs into ``input_ids`` / ``attention_mask`` / ``loss_mask`` with 2 rows per pair (row 2i chosen,
2i + 1 rejected) for ``verl._C.trainer.DPOTrainer``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import torch

from ...errors import DataError
from .reader import RowOrigin
from .rl_dataset import check_messages, render_chat, render_prompt
from .sft_dataset import LossMaskedRows, collate_sft, truncate_row

__all__ = ["PreferenceDataset", "collate_preference", "COMPLETION_KEYS"]

COMPLETION_KEYS = ("chosen", "rejected")  # TRL's column names


def collate_preference(pairs: Sequence[dict], pad_token_id: int = 0) -> dict[str, torch.Tensor]:
    """Right-pads pairs into ``input_ids`` / ``attention_mask`` / ``loss_mask`` (2 * len(pairs), longest sequence):
    row 2i is pair i's chosen sequence, row 2i + 1 its rejected one."""
    if not pairs:
        raise DataError("collate_preference: empty batch")
    rows = []
    for i, pair in enumerate(pairs):
        for side in COMPLETION_KEYS:
            if f"{side}_input_ids" not in pair or f"{side}_loss_mask" not in pair:
                raise DataError(f"collate_preference: pair {i} has no '{side}_input_ids' / '{side}_loss_mask'")
            rows.append({"input_ids": pair[f"{side}_input_ids"], "loss_mask": pair[f"{side}_loss_mask"]})
    return collate_sft(rows, pad_token_id)


class PreferenceDataset(LossMaskedRows):
    """Preference pairs from JSONL / JSON / Parquet files, tokenized once when loaded.

    Args:
        data_files: a path or list of paths (rows are concatenated in order).
        tokenizer: a ``verl.Tokenizer`` (or any object with ``apply_chat_template``, ``encode``, ``eos_token_id``).
        config: the ``data`` section (a ``verl.Config`` node or dict): ``prompt_key``, ``max_length``,
            ``truncation``, ``apply_chat_template_kwargs``, ``shuffle``, ``seed``.
        max_samples: keep only this many rows (-1: all); the first ones, or a seeded random choice when
            ``config.shuffle``.

    Raises ``verl.DataError`` naming ``file:line`` for unreadable files and bad rows (see the module docstring),
    ``verl.ConfigError`` for a bad config value or a tokenizer without an EOS token.
    """

    def __init__(self, data_files: str | os.PathLike | Sequence[str | os.PathLike], tokenizer: Any,
                 config: Any = None, max_samples: int = -1) -> None:
        rows = self._read_rows(data_files, tokenizer, config, max_samples, "text completions end with it")
        self.pairs: list[dict[str, torch.Tensor]] = [self._tokenize(row, origin) for row, origin in rows]

    # -- tokenization -----------------------------------------------------------------------------
    def _tokenize(self, row: Any, origin: RowOrigin) -> dict[str, torch.Tensor]:
        if not isinstance(row, dict):
            raise DataError(f"{origin}: a row must be an object, got {type(row).__name__}")
        prompt = row.get(self.prompt_key)
        if prompt is None:
            raise DataError(f"{origin}: row has no '{self.prompt_key}' (keys: {sorted(row)[:10]})")
        messages = self._prompt_messages(prompt, origin)
        prompt_text, prompt_ids = render_prompt(self.tokenizer, messages, self.apply_chat_template_kwargs, origin)
        pair = {}
        for side in COMPLETION_KEYS:
            completion = self._completion_ids(row, side, messages, prompt_text, origin)
            ids, mask = truncate_row(prompt_ids + completion, [0] * len(prompt_ids) + [1] * len(completion),
                                     self.max_length, self.truncation, f"{origin} ({side})")
            pair[f"{side}_input_ids"] = torch.tensor(ids, dtype=torch.long)
            pair[f"{side}_loss_mask"] = torch.tensor(mask, dtype=torch.long)
        return pair

    def _completion_ids(self, row: dict, side: str, prompt: list[dict], prompt_text: str,
                        origin: RowOrigin) -> list[int]:
        value = row.get(side)
        if value is None:
            raise DataError(f"{origin}: row has no '{side}' completion (a preference row needs '{self.prompt_key}', "
                            f"'chosen' and 'rejected')")
        if isinstance(value, str):
            if not value:
                raise DataError(f"{origin}: '{side}' is an empty string")
            return self._encode(value) + [int(self.eos_token_id)]
        if not isinstance(value, list):
            raise DataError(f"{origin}: '{side}' must be a string or a list of chat messages, got "
                            f"{type(value).__name__}")
        check_messages(value, side, origin)
        if value[0]["role"] != "assistant":
            raise DataError(f"{origin}: '{side}' must start with an assistant message, got role "
                            f"{value[0]['role']!r}")
        full = render_chat(self.tokenizer, prompt + value, self.apply_chat_template_kwargs, origin,
                           add_generation_prompt=False)
        if not full.startswith(prompt_text):
            raise DataError(f"{origin}: the chat template does not render '{self.prompt_key}' + '{side}' as the "
                            "rendered prompt followed by the completion, so the completion cannot be located")
        completion = self._encode(full[len(prompt_text):])
        if not completion:
            raise DataError(f"{origin}: '{side}' renders to no completion token")
        return completion

    # -- access -----------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.pairs)

    def __getitem__(self, item: int) -> dict[str, torch.Tensor]:
        if not -len(self) <= item < len(self):
            raise IndexError(f"PreferenceDataset index {item} out of range for {len(self)} rows")
        return self.pairs[item]

    def collate_fn(self, pairs: Sequence[dict]) -> dict[str, torch.Tensor]:
        """``collate_preference`` with this dataset's pad token."""
        return collate_preference(pairs, self.pad_token_id)

    def __repr__(self) -> str:
        return f"PreferenceDataset({len(self)} pairs from {self.data_files}, max_length={self.max_length})"
