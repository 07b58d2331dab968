"""``LanguageModelEnv``: the single-turn language environment of the tutorials -- prompts in, the policy's
responses out, a reward function scoring them.

>>> env = verl.envs.LanguageModelEnv(tokenizer, model, prompts=["What is 2+3?", ...], reward_fn=score)
>>> trainer = PPOTrainer(config=RLConfig(algorithm="grpo", n=4, batch_size=2), env=env)
>>> trajectories = trainer.collect_rollouts()
>>> rewards = trainer.compute_rewards(trajectories)            # (bs,) one reward per response
>>> metrics = trainer.optimize(trajectories, rewards)

``tokenizer``: a ``verl.Tokenizer``, a transformers tokenizer or a directory holding ``tokenizer.json``.
``model``: a ``verl.models`` ``CausalLM``, a transformers ``PreTrainedModel`` (copied through ``HFActor``) or a
checkpoint directory. ``prompts``: strings (one user message each), chat message lists, or rows in verl's schema
(``prompt`` messages, optionally ``reward_model.ground_truth`` / ``extra_info.ground_truth`` and ``data_source``).
``reward_fn``: any form ``verl.trainer.reward_fn`` accepts (``f(response)``, ``f(prompt, response)``, async, ...),
checked here.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from ..errors import DataError, InvalidArgumentError
from ..models.actor import as_actor
from ..trainer.reward_fn import RewardFunction
from ..utils.dataset.reader import RowOrigin
from ..utils.dataset.rl_dataset import check_messages, check_row

__all__ = ["LanguageModelEnv"]


def _as_tokenizer(tokenizer: Any) -> Any:
    if isinstance(tokenizer, (str, os.PathLike)):
        from ..tokenizer import load_tokenizer

        return load_tokenizer(tokenizer)
    for needed in ("apply_chat_template", "encode", "decode"):
        if not callable(getattr(tokenizer, needed, None)):
            raise InvalidArgumentError(f"tokenizer must be a verl.Tokenizer, a transformers tokenizer or a directory; "
                                       f"{type(tokenizer).__name__} has no {needed}()")
    return tokenizer


class LanguageModelEnv:
    """Prompts, a policy and a reward function (see the module docstring). ``rows`` are the prompts in verl's
    schema, in order; ``data_source`` names rows that carry none."""

    def __init__(self, tokenizer: Any, model: Any, prompts: Sequence[Any], reward_fn: Any,
                 data_source: str = "env") -> None:
        self.tokenizer = _as_tokenizer(tokenizer)
        self.model = as_actor(model)
        self.reward_fn = reward_fn if isinstance(reward_fn, RewardFunction) else RewardFunction(reward_fn)
        self.data_source = data_source
        if isinstance(prompts, (str, bytes)) or not isinstance(prompts, Sequence) or not prompts:
            raise DataError(f"LanguageModelEnv: prompts must be a non-empty list, got {type(prompts).__name__}")
        self.rows = [self._row(prompt, i) for i, prompt in enumerate(prompts)]

    def _row(self, prompt: Any, index: int) -> dict:
        origin = RowOrigin("LanguageModelEnv.prompts", index + 1)
        if isinstance(prompt, str):
            row = {"prompt": [{"role": "user", "content": prompt}]}
        elif isinstance(prompt, list):
            check_messages(prompt, "prompt", origin)
            row = {"prompt": prompt}
        elif isinstance(prompt, dict):
            row = dict(prompt)
        else:
            raise DataError(f"{origin}: a prompt must be a string, a list of chat messages or a row dict, got "
                            f"{type(prompt).__name__}")
        row.setdefault("data_source", self.data_source)
        row = check_row(row, origin, require_ground_truth=False)
        return {**row, "extra_info": {"index": index, **(row.get("extra_info") or {})}}

    def __len__(self) -> int:
        return len(self.rows)

    def __repr__(self) -> str:
        return f"LanguageModelEnv({len(self)} prompts, reward_fn={self.reward_fn.name})"
