"""Rows without a ``data_source`` (the tutorials' ``{"prompt": ..., "extra_info": {"ground_truth": ...}}``, issue 40):
the reward function decides, getting ``data_source=None``; verl's ``default_compute_score`` chooses its scorer by
data source, so a manager scoring with it refuses such a batch with an error naming data_source."""

from __future__ import annotations

import pytest

import verl
from verl.trainer.ppo.reward import load_reward_manager
from verl.utils.reward_score import default_compute_score
from verl.workers.reward_manager import BatchRewardManager, DAPORewardManager, NaiveRewardManager

PROMPTS = ["Q: 9*8?", "Hi"]
RESPONSES = ["9*8 = 72\n#### 72", "I do not know"]
TRUTHS = ["72", "5"]
MISSING = r"no 'data_source' field .*default_compute_score, which chooses its scorer by data_source .*pass reward_fn="


@pytest.fixture
def no_source(batch_maker):
    data = batch_maker(PROMPTS, RESPONSES, TRUTHS)
    del data.non_tensor_batch["data_source"]
    return data


def last_token_scores(reward) -> list[float]:
    return reward.sum(-1).tolist()


@pytest.mark.parametrize("manager_cls", [NaiveRewardManager, DAPORewardManager, BatchRewardManager])
def test_a_response_only_reward_scores_rows_without_data_source(manager_cls, no_source, tokenizer):
    reward = manager_cls(tokenizer, 0, compute_score=lambda response: float(len(response)))(no_source)
    assert last_token_scores(reward) == [float(len(r)) for r in RESPONSES]


def test_verl_signature_gets_data_source_none(no_source, tokenizer):
    seen = []

    def compute_score(data_source, solution_str, ground_truth, extra_info=None):
        seen.append((data_source, solution_str, ground_truth))
        return float(solution_str.endswith(ground_truth))

    reward = NaiveRewardManager(tokenizer, 1, compute_score=compute_score)(no_source)  # num_examine groups by source
    assert seen == [(None, r, g) for r, g in zip(RESPONSES, TRUTHS)]
    assert last_token_scores(reward) == [1.0, 0.0]


def test_async_reward_scores_rows_without_data_source(no_source, tokenizer):
    async def execute_and_verify(response):
        return 1.0 if "72" in response else 0.25

    reward = NaiveRewardManager(tokenizer, 0, compute_score=execute_and_verify)(no_source)
    assert last_token_scores(reward) == [1.0, 0.25]


@pytest.mark.parametrize("make", [
    lambda tok: NaiveRewardManager(tok, 0),
    lambda tok: DAPORewardManager(tok, 0),
    lambda tok: BatchRewardManager(tok, 0),
    lambda tok: load_reward_manager(verl.load_config(), tok),  # the trainer's path without reward_fn
    lambda tok: load_reward_manager(verl.load_config().override("reward.sandbox_fusion.url=http://sandbox"), tok),
], ids=["naive", "dapo", "batch", "configured", "configured-with-sandbox"])
def test_default_compute_score_refuses_rows_without_data_source(make, no_source, tokenizer):
    with pytest.raises(verl.DataError, match=MISSING):
        make(tokenizer)(no_source)


def test_default_compute_score_names_a_missing_data_source():
    with pytest.raises(verl.DataError, match="default_compute_score needs the sample's data_source"):
        default_compute_score(None, "#### 72", "72")
    assert default_compute_score("openai/gsm8k", "#### 72", "72") == 1.0


def test_a_null_data_source_in_a_row_names_it(batch_maker, tokenizer):
    # the column is there but one row's value is null: the sample's error names data_source
    data = batch_maker(PROMPTS, RESPONSES, TRUTHS, data_sources=["openai/gsm8k", None])
    with pytest.raises(verl.RewardError, match=r"default_compute_score needs the sample's data_source.*sample 1"):
        NaiveRewardManager(tokenizer, 0)(data)
