"""Reward managers: decoding of the valid tokens, score on the last valid response token, extra info, DAPO's
overlong shaping, the registry."""

from __future__ import annotations

import pytest
import torch

import verl
from verl.workers.reward_manager import (BatchRewardManager, DAPORewardManager, NaiveRewardManager,
                                         get_reward_manager_cls, register)

PROMPTS = ["Q: 9*8?", "What is one plus one, exactly? Think.", "Hi"]
RESPONSES = ["9*8 = 72\n#### 72", "#### 3", "I do not know"]
TRUTHS = ["72", "2", "5"]


def test_naive_places_default_gsm8k_score_on_last_valid_token(batch_maker, tokenizer):
    data = batch_maker(PROMPTS, RESPONSES, TRUTHS)
    lengths = data.batch["attention_mask"][:, 24:].sum(-1).tolist()
    assert len(set(lengths)) == 3  # three different response lengths, all right-padded
    reward = NaiveRewardManager(tokenizer, num_examine=0)(data)
    assert reward.dtype == torch.float32 and reward.shape == (3, 16)
    expected = torch.zeros(3, 16)
    expected[0, lengths[0] - 1] = 1.0  # "#### 72" matches; the trailing eos is a special token, skipped
    assert torch.equal(reward, expected)


def test_naive_passes_decoded_strings_and_extra_info(batch_maker, tokenizer):
    seen = []

    def compute_score(data_source, solution_str, ground_truth, extra_info=None):
        seen.append((data_source, solution_str, ground_truth, dict(extra_info)))
        return len(solution_str)

    extra = [{"index": 0}, {"index": 1}, {"index": 2}]
    data = batch_maker(PROMPTS, RESPONSES, TRUTHS, data_sources=["a", "b", "a"], extra_infos=extra)
    reward = NaiveRewardManager(tokenizer, 0, compute_score=compute_score)(data)
    assert [s[1] for s in seen] == RESPONSES  # padding and eos not in the text
    assert [s[0] for s in seen] == ["a", "b", "a"] and [s[2] for s in seen] == TRUTHS
    assert seen[1][3] == {"index": 1, "num_turns": None, "rollout_reward_scores": {}}
    assert extra[1] == {"index": 1}  # the dataset's dicts are not modified
    assert reward.sum(-1).tolist() == [float(len(r)) for r in RESPONSES]


def test_naive_dict_scores_fill_reward_extra_info(batch_maker, tokenizer):
    data = batch_maker(PROMPTS, RESPONSES, TRUTHS, data_sources=["math_dapo"] * 3)
    result = NaiveRewardManager(tokenizer, 0)(data, return_dict=True)
    info = result["reward_extra_info"]
    # math_dapo reads "Answer:" lines, then the box: none here -> every sample -1 with pred [INVALID]
    assert info["score"] == [-1.0, -1.0, -1.0] and info["acc"] == [False, False, False]
    assert info["pred"] == ["[INVALID]"] * 3
    assert result["reward_tensor"].sum().item() == -3.0


def test_rm_scores_are_returned_unchanged(batch_maker, tokenizer):
    data = batch_maker(PROMPTS, RESPONSES, TRUTHS)
    data.batch["rm_scores"] = torch.full((3, 16), 0.5)
    assert torch.equal(NaiveRewardManager(tokenizer, 0)(data), data.batch["rm_scores"])


def test_batch_manager_calls_once_and_sets_acc(batch_maker, tokenizer):
    calls = []

    def compute_score(data_sources, solution_strs, ground_truths, extra_infos, scale=1.0):
        calls.append(len(solution_strs))
        return [scale * float(s.endswith(g)) for s, g in zip(solution_strs, ground_truths)]

    data = batch_maker(PROMPTS, RESPONSES, TRUTHS)
    manager = BatchRewardManager(tokenizer, 0, compute_score=compute_score, scale=2.0)
    reward = manager(data)
    assert calls == [3]
    lengths = data.batch["attention_mask"][:, 24:].sum(-1)
    assert reward[0, lengths[0] - 1].item() == 2.0 and reward.sum().item() == 2.0
    assert data.batch["acc"].tolist() == [2.0, 0.0, 0.0]


def test_batch_manager_default_scores_per_sample(batch_maker, tokenizer):
    data = batch_maker(PROMPTS, RESPONSES, TRUTHS)
    assert BatchRewardManager(tokenizer, 0)(data).sum(-1).tolist() == [1.0, 0.0, 0.0]


def _ids_of_length(tokenizer, n):
    word = tokenizer.encode(" go", add_special_tokens=False)
    assert len(word) == 1
    return word * n


@pytest.mark.parametrize("factor", [1.0, 0.5])
def test_dapo_overlong_penalty_values(batch_maker, tokenizer, factor):
    # max_resp_len 16, buffer 4: no penalty up to 12 tokens, then -factor * (len - 12) / 4
    responses = [_ids_of_length(tokenizer, n) for n in (10, 12, 13, 15, 16)]
    data = batch_maker(["p"] * 5, responses, ["x"] * 5, response_length=16)
    cfg = {"enable": True, "len": 4, "penalty_factor": factor, "log": True}
    manager = DAPORewardManager(tokenizer, 0, compute_score=lambda response: 1.0, max_resp_len=16,
                                overlong_buffer_cfg=cfg)
    result = manager(data, return_dict=True)
    penalties = [0.0, 0.0, -0.25 * factor, -0.75 * factor, -1.0 * factor]
    for i, n in enumerate((10, 12, 13, 15, 16)):
        row = result["reward_tensor"][i]
        assert row[n - 1].item() == pytest.approx(1.0 + penalties[i])
        assert row.count_nonzero().item() <= 1
    info = result["reward_extra_info"]
    assert info["overlong_reward"] == pytest.approx(penalties)
    assert info["overlong"] == [False, False, True, True, True]
    assert info["acc"] == [1.0] * 5  # a non-dict score is logged as acc


def test_dapo_without_buffer_and_config_errors(batch_maker, tokenizer):
    data = batch_maker(PROMPTS, RESPONSES, TRUTHS)
    assert DAPORewardManager(tokenizer, 0)(data).sum(-1).tolist() == [1.0, 0.0, 0.0]
    with pytest.raises(verl.ConfigError, match="max_resp_len must be provided"):
        DAPORewardManager(tokenizer, 0, overlong_buffer_cfg={"enable": True, "len": 4})
    with pytest.raises(verl.ConfigError, match="must be larger than overlong_buffer.len"):
        DAPORewardManager(tokenizer, 0, max_resp_len=2, overlong_buffer_cfg={"enable": True, "len": 4})
    with pytest.raises(verl.ConfigError, match="must be positive"):
        DAPORewardManager(tokenizer, 0, max_resp_len=8, overlong_buffer_cfg={"enable": True, "len": 0})


def test_dapo_strips_a_plain_text_eos(tokenizer, batch_maker):
    class TextEos:  # a tokenizer whose eos survives skip_special_tokens
        eos_token = "</s>"

        def decode(self, ids, skip_special_tokens=False):
            return tokenizer.decode(ids, skip_special_tokens=skip_special_tokens) + "</s>"

    seen = []
    data = batch_maker(PROMPTS, RESPONSES, TRUTHS)
    DAPORewardManager(TextEos(), 0, compute_score=lambda response: seen.append(response) or 0.0)(data)
    assert seen == RESPONSES


def test_registry():
    assert get_reward_manager_cls("naive") is NaiveRewardManager
    assert get_reward_manager_cls("batch") is BatchRewardManager
    assert get_reward_manager_cls("dapo") is DAPORewardManager
    with pytest.raises(verl.ConfigError, match="Unknown reward manager: nope"):
        get_reward_manager_cls("nope")

    @register("test_custom_manager")
    class Custom(NaiveRewardManager):
        pass

    assert get_reward_manager_cls("test_custom_manager") is Custom
    register("test_custom_manager")(Custom)  # same class again is fine
    with pytest.raises(ValueError, match="already been registered"):
        register("test_custom_manager")(NaiveRewardManager)


def test_num_examine_prints_first_samples_per_source(batch_maker, tokenizer, capsys):
    data = batch_maker(PROMPTS, RESPONSES, TRUTHS, data_sources=["openai/gsm8k", "openai/gsm8k", "lighteval/MATH"])
    NaiveRewardManager(tokenizer, num_examine=1)(data)
    out = capsys.readouterr().out
    assert out.count("[prompt]") == 2  # one per data source
    assert f"[prompt] {PROMPTS[0]}\n[response] {RESPONSES[0]}\n[ground_truth] 72\n[score] 1.0" in out
    assert PROMPTS[1] not in out
