"""Python reward functions: each calling convention, detected once; errors that name the sample."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
import torch

import verl
from verl.trainer.reward_fn import RewardFunction
from verl.workers.reward_manager import BatchRewardManager, NaiveRewardManager

PROMPTS = ["Q: 9*8?", "What is one plus one?", "Hi"]
RESPONSES = ["72", "3", "I do not know"]
TRUTHS = ["72", "2", "5"]


def rewards_of(fn, data, tokenizer):
    manager_cls = BatchRewardManager if RewardFunction(fn).batched else NaiveRewardManager
    return manager_cls(tokenizer, 0, compute_score=fn)(data).sum(-1).tolist()


def f_response(response):
    return len(response)


def f_two(response, ground_truth):
    return float(response == ground_truth)


def f_verl(data_source, solution_str, ground_truth, extra_info=None):
    return float(solution_str == ground_truth) + (0.5 if data_source == "b" else 0.0)


def f_keywords(*, ground_truth, response, prompt):
    return float(response == ground_truth) + 10 * ("plus" in prompt)


def f_batched(responses, ground_truths):
    return [float(r == g) for r, g in zip(responses, ground_truths)]


def f_batched_verl(data_sources, solution_strs, ground_truths, extra_infos, **kwargs):
    return np.array([float(s == g) for s, g in zip(solution_strs, ground_truths)])


def f_batched_flag(rs, gts):
    return torch.tensor([float(r == g) for r, g in zip(rs, gts)])


f_batched_flag.batched = True


def compute_reward(data_batch):
    """The tutorials' form: one dict of lists in, one reward per sample out."""
    assert sorted(data_batch) == ["data_source", "extra_info", "ground_truth", "prompts", "responses"]
    return [float(r == g) + 10 * ("plus" in p)
            for p, r, g in zip(data_batch["prompts"], data_batch["responses"], data_batch["ground_truth"])]


class Scorer:
    def __call__(self, response, gt):
        return 2.0 * (response == gt)


@pytest.mark.parametrize(
    ("fn", "expected", "batched"),
    [
        (f_response, [2.0, 1.0, 13.0], False),
        (lambda r: len(r), [2.0, 1.0, 13.0], False),
        (f_two, [1.0, 0.0, 0.0], False),
        (lambda r, gt: r == gt, [1.0, 0.0, 0.0], False),  # bool reward
        (f_verl, [1.0, 0.5, 0.0], False),
        (lambda a, b, c, d: float(b == c), [1.0, 0.0, 0.0], False),  # verl's positional order
        (f_keywords, [1.0, 10.0, 0.0], False),
        (Scorer(), [2.0, 0.0, 0.0], False),
        (functools.partial(f_two), [1.0, 0.0, 0.0], False),
        (f_batched, [1.0, 0.0, 0.0], True),
        (f_batched_verl, [1.0, 0.0, 0.0], True),
        (f_batched_flag, [1.0, 0.0, 0.0], True),
        (compute_reward, [1.0, 10.0, 0.0], True),
        (lambda data_batch: [len(r) for r in data_batch["responses"]], [2.0, 1.0, 13.0], True),
    ],
)
def test_each_form(fn, expected, batched, batch_maker, tokenizer):
    assert RewardFunction(fn).batched is batched
    data = batch_maker(PROMPTS, RESPONSES, TRUTHS, data_sources=["a", "b", "a"])
    assert rewards_of(fn, data, tokenizer) == expected


def test_form_is_detected_once(monkeypatch, batch_maker, tokenizer):
    import inspect

    manager = NaiveRewardManager(tokenizer, 0, compute_score=f_two)
    calls = []
    real = inspect.signature
    monkeypatch.setattr(inspect, "signature", lambda *a, **k: calls.append(1) or real(*a, **k))
    manager(batch_maker(PROMPTS, RESPONSES, TRUTHS))
    assert calls == []


def test_batched_flag_false_forces_per_sample():
    def per_sample(responses):  # the name says batched, the attribute says otherwise
        return len(responses)

    per_sample.batched = False
    wrapped = RewardFunction(per_sample)
    assert not wrapped.batched
    assert wrapped.score(0, response="abc") == 3


@pytest.mark.parametrize(
    "fn",
    [lambda: 1.0, lambda *args: 1.0, lambda a, b, c, d, e: 1.0, lambda ground_truth, x: 1.0, lambda x, *, w: 1.0],
)
def test_undetectable_signatures_are_rejected(fn):
    with pytest.raises(verl.InvalidArgumentError, match="cannot tell which arguments"):
        RewardFunction(fn)


def test_non_callable_rejected():
    with pytest.raises(verl.InvalidArgumentError, match="callable"):
        RewardFunction(3)


LONG = "step " * 60 + "answer"  # 306 characters


def test_raising_function_names_the_sample(batch_maker, tokenizer):
    def scorer(response):
        if response.startswith("step"):
            raise KeyError("missing field")
        return 0.0

    data = batch_maker(PROMPTS, ["ok", LONG, "ok"], TRUTHS, data_sources=["a", "my/source", "a"], response_length=80)
    with pytest.raises(verl.RewardError) as info:
        NaiveRewardManager(tokenizer, 0, compute_score=scorer)(data)
    message = str(info.value)
    assert "sample 1" in message and "'my/source'" in message and "KeyError" in message
    assert repr(LONG[:200]) in message and LONG[:201] not in message  # exactly the first 200 characters
    assert isinstance(info.value.__cause__, KeyError)
    assert isinstance(info.value, RuntimeError)


def test_raising_batched_function_names_the_batch(batch_maker, tokenizer):
    def scorer(responses):
        raise ValueError("bad batch")

    data = batch_maker(PROMPTS, RESPONSES, TRUTHS)
    with pytest.raises(verl.RewardError, match=r"samples 0\.\.2 .*'openai/gsm8k'.*bad batch|bad batch.*samples 0\.\.2"):
        BatchRewardManager(tokenizer, 0, compute_score=scorer)(data)


@pytest.mark.parametrize(
    ("value", "what"),
    [(math.nan, "non-finite reward nan"), (math.inf, "non-finite reward inf"), (-math.inf, "non-finite"),
     ("1.0", "non-numeric reward '1.0'"), (None, "non-numeric reward None"), ([1.0], "non-numeric"),
     (torch.tensor([1.0, 2.0]), "tensor of shape"), ({"acc": 1}, "without a 'score'"),
     ({"score": math.nan}, "non-finite")],
)
def test_bad_reward_values_name_the_sample(value, what, batch_maker, tokenizer):
    def scorer(response):
        return value if response == "3" else 0.0

    data = batch_maker(PROMPTS, RESPONSES, TRUTHS, data_sources=["a", "src-b", "a"])
    with pytest.raises(verl.RewardError, match="sample 1") as info:
        NaiveRewardManager(tokenizer, 0, compute_score=scorer)(data)
    assert what in str(info.value) and "'src-b'" in str(info.value) and "response[:200]='3'" in str(info.value)


def test_numeric_kinds_are_accepted(batch_maker, tokenizer):
    values = iter([np.float32(0.5), torch.tensor(2.0), np.int64(3)])
    data = batch_maker(PROMPTS, RESPONSES, TRUTHS)
    reward = NaiveRewardManager(tokenizer, 0, compute_score=lambda response: next(values))(data)
    assert reward.sum(-1).tolist() == [0.5, 2.0, 3.0]


def test_batched_length_mismatch_and_nan(batch_maker, tokenizer):
    data = batch_maker(PROMPTS, RESPONSES, TRUTHS)
    with pytest.raises(verl.RewardError, match="returned 2 rewards for 3 samples"):
        BatchRewardManager(tokenizer, 0, compute_score=lambda responses: [1.0, 2.0])(data)
    with pytest.raises(verl.RewardError, match="sample 2 .*non-finite|non-finite.*sample 2"):
        BatchRewardManager(tokenizer, 0, compute_score=lambda responses: [1.0, 2.0, float("nan")])(data)
    with pytest.raises(verl.RewardError, match="expected a sequence of 3"):
        BatchRewardManager(tokenizer, 0, compute_score=lambda responses: 1.0)(data)


def test_build_reward_manager_picks_the_manager(batch_maker, tokenizer):
    from verl.workers.reward_manager import build_reward_manager

    data = batch_maker(PROMPTS, RESPONSES, TRUTHS)
    batched = build_reward_manager(f_batched, tokenizer)
    assert isinstance(batched, BatchRewardManager) and batched(data).sum(-1).tolist() == [1.0, 0.0, 0.0]
    per_sample = build_reward_manager(f_two, tokenizer)
    assert isinstance(per_sample, NaiveRewardManager) and per_sample(data).sum(-1).tolist() == [1.0, 0.0, 0.0]
    default = build_reward_manager(None, tokenizer)  # default_compute_score: gsm8k's "####" rule
    assert default(batch_maker(PROMPTS, ["#### 72", "2", "x"], TRUTHS)).sum(-1).tolist() == [1.0, 0.0, 0.0]


def test_dict_batch_form(batch_maker, tokenizer):
    from verl.workers.reward_manager import build_reward_manager

    data = batch_maker(PROMPTS, RESPONSES, TRUTHS, data_sources=["a", "b", "a"],
                       extra_infos=[{"i": i} for i in range(3)])
    seen = {}

    def f(data_batch, scale=2.0):  # an optional parameter beside data_batch keeps the form
        seen.update(data_batch)
        return [scale * len(r) for r in data_batch["responses"]]

    manager = build_reward_manager(f, tokenizer)
    assert isinstance(manager, BatchRewardManager)
    assert manager(data).sum(-1).tolist() == [4.0, 2.0, 26.0]
    assert seen["data_source"] == ["a", "b", "a"] and seen["ground_truth"] == TRUTHS
    assert [e["i"] for e in seen["extra_info"]] == [0, 1, 2]
    assert [p.endswith(q) for p, q in zip(seen["prompts"], PROMPTS)] == [True] * 3
    with pytest.raises(verl.RewardError, match="returned 1 rewards for 3 samples"):
        build_reward_manager(lambda data_batch: [1.0], tokenizer)(data)


def test_naive_timeout_scores_zero_and_continues(batch_maker, tokenizer, capsys):
    import time

    def slow(response):
        if response == "3":
            time.sleep(5)
        return 1.0

    manager = NaiveRewardManager(tokenizer, 0, compute_score=slow, compute_score_timeout=0.2)
    assert manager(batch_maker(PROMPTS, RESPONSES, TRUTHS)).sum(-1).tolist() == [1.0, 0.0, 1.0]
    assert "exceeded 0.2s" in capsys.readouterr().out


def test_naive_timeout_holds_off_the_main_thread(batch_maker, tokenizer):
    """The trainer scores on other threads (while the engine decodes; the one-step off-policy rollout thread), where
    SIGALRM cannot reach: the timeout still scores the slow sample 0.0 in about its time."""
    import threading
    import time

    def slow(response):
        if response == "3":
            time.sleep(5)
        return 1.0

    manager = NaiveRewardManager(tokenizer, 0, compute_score=slow, compute_score_timeout=0.2)
    out = {}

    def score():
        start = time.monotonic()
        out["scores"] = manager(batch_maker(PROMPTS, RESPONSES, TRUTHS)).sum(-1).tolist()
        out["seconds"] = time.monotonic() - start

    worker = threading.Thread(target=score)
    worker.start()
    worker.join(10)
    assert out["scores"] == [1.0, 0.0, 1.0]
    assert out["seconds"] < 2.0
