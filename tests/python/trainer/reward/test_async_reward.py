"""``async def`` reward functions (issue 16): awaited concurrently across the batch, never more than
``reward.max_concurrent`` at once; an exception names its sample; a slow sample hits the per-sample timeout; a
batched async function is awaited once; all of it from plain code, from inside a running event loop, and from the
C++ training step."""

from __future__ import annotations

import asyncio
import math

import pytest

import verl
from verl import PPOTrainer, RLConfig
from verl.trainer.ppo.reward import load_reward_manager
from verl.trainer.reward_fn import DEFAULT_MAX_CONCURRENT, RewardFunction
from verl.workers.reward_manager import BatchRewardManager, DAPORewardManager, NaiveRewardManager

from trainer_helpers import toy_overrides

RESPONSES = [f"answer {i}" + "!" * i for i in range(12)]


class Tracker:
    """An async per-sample scorer that records how many of its calls are in flight at once."""

    def __init__(self, delay: float = 0.02) -> None:
        self.active = 0
        self.peak = 0
        self.calls = 0
        self.delay = delay

    async def __call__(self, response):
        self.active += 1
        self.calls += 1
        self.peak = max(self.peak, self.active)
        try:
            await asyncio.sleep(self.delay)
            return float(len(response))
        finally:
            self.active -= 1


def batch(batch_maker, responses=RESPONSES):
    n = len(responses)
    return batch_maker([f"Q{i}" for i in range(n)], responses, [str(i) for i in range(n)], data_sources=["toy"] * n,
                       response_length=24)


def scores(reward_tensor):
    return reward_tensor.sum(-1).tolist()


@pytest.mark.parametrize("manager_cls", [NaiveRewardManager, DAPORewardManager, BatchRewardManager])
def test_concurrency_is_bounded(manager_cls, batch_maker, tokenizer):
    scorer = Tracker()
    assert RewardFunction(scorer).is_async
    manager = manager_cls(tokenizer, 0, scorer, max_concurrent=3)
    out = manager(batch(batch_maker))
    assert scores(out) == [float(len(r)) for r in RESPONSES]
    assert scorer.calls == len(RESPONSES)
    assert scorer.peak == 3  # concurrent, and never more than the bound


def test_default_bound_runs_the_whole_small_batch_at_once(batch_maker, tokenizer):
    scorer = Tracker()
    NaiveRewardManager(tokenizer, 0, scorer)(batch(batch_maker))
    assert scorer.peak == len(RESPONSES) < DEFAULT_MAX_CONCURRENT


def test_exception_names_the_sample(batch_maker, tokenizer):
    async def scorer(response, ground_truth):
        await asyncio.sleep(0.001)
        if ground_truth == "5":
            raise ZeroDivisionError("bad sample")
        return 1.0

    with pytest.raises(verl.RewardError, match=r"raised ZeroDivisionError: bad sample on sample 5 "
                                               r"\(data_source='toy', response\[:200\]='answer 5!!!!!'\)") as info:
        NaiveRewardManager(tokenizer, 0, scorer, max_concurrent=4)(batch(batch_maker))
    assert isinstance(info.value.__cause__, ZeroDivisionError)


def test_the_first_failing_sample_is_reported(batch_maker, tokenizer):
    async def scorer(response, ground_truth):
        await asyncio.sleep(0.05 if ground_truth == "2" else 0.0)  # sample 2 fails last, but it comes first
        if ground_truth in ("2", "7"):
            raise ValueError(ground_truth)
        return 0.0

    with pytest.raises(verl.RewardError, match="on sample 2 "):
        NaiveRewardManager(tokenizer, 0, scorer)(batch(batch_maker))


def test_non_numeric_async_reward_is_an_error(batch_maker, tokenizer):
    async def scorer(response):
        return "high"

    with pytest.raises(verl.RewardError, match="non-numeric reward 'high'"):
        NaiveRewardManager(tokenizer, 0, scorer)(batch(batch_maker))


def test_slow_sample_times_out_to_zero(batch_maker, tokenizer, capsys):
    async def scorer(response, ground_truth):
        await asyncio.sleep(5.0 if ground_truth == "3" else 0.0)
        return 1.0

    out = NaiveRewardManager(tokenizer, 0, scorer, compute_score_timeout=0.2)(batch(batch_maker))
    assert scores(out) == [0.0 if i == 3 else 1.0 for i in range(len(RESPONSES))]
    assert "exceeded 0.2s" in capsys.readouterr().out


def test_batched_async_function_is_awaited_once(batch_maker, tokenizer):
    calls = []

    async def scorer(responses, ground_truths):
        calls.append(len(responses))
        await asyncio.sleep(0.001)
        return [float(r.endswith("!")) for r in responses]

    out = BatchRewardManager(tokenizer, 0, scorer)(batch(batch_maker))
    assert calls == [len(RESPONSES)]
    assert scores(out) == [0.0] + [1.0] * (len(RESPONSES) - 1)


def test_async_call_method_is_detected():
    class Scorer:
        async def __call__(self, response):
            return 1.0

    assert RewardFunction(Scorer()).is_async
    assert not RewardFunction(lambda response: 1.0).is_async


def test_inside_a_running_event_loop(batch_maker, tokenizer):
    scorer = Tracker()
    manager = NaiveRewardManager(tokenizer, 0, scorer, max_concurrent=2)

    async def main():  # e.g. a notebook cell: the reward still runs, on its own loop
        return manager(batch(batch_maker))

    assert scores(asyncio.run(main())) == [float(len(r)) for r in RESPONSES]
    assert scorer.peak == 2


def test_max_concurrent_from_the_config(tokenizer):
    cfg = verl.load_config(overrides=["+reward.max_concurrent=5"])
    assert load_reward_manager(cfg, tokenizer).max_concurrent == 5
    assert load_reward_manager(verl.load_config(), tokenizer).max_concurrent == DEFAULT_MAX_CONCURRENT
    for bad in ("0", "two", "true"):
        with pytest.raises(verl.ConfigError, match="reward.max_concurrent must be an integer >= 1"):
            load_reward_manager(verl.load_config(overrides=[f"+reward.max_concurrent={bad}"]), tokenizer)


def test_training_step_with_an_async_reward(tiny_model_dir, toy_data, tmp_path):
    scorer = Tracker(delay=0.005)
    cfg = RLConfig(overrides=[*toy_overrides(tiny_model_dir, str(tmp_path)), "+reward.max_concurrent=3"])
    trainer = PPOTrainer(config=cfg, reward_fn=scorer, train_dataset=toy_data["train"])
    rows = [trainer.train_dataset[i] for i in range(4)]
    metrics = trainer.step(rows)
    assert scorer.calls == 16 and scorer.peak == 3  # 4 prompts x rollout.n=4, three at a time
    assert math.isfinite(metrics["actor/pg_loss"])
    # the scores reached the step: critic/score is the mean response length in characters
    responses = trainer.tokenizer.batch_decode(
        [r[:int(n)] for r, n in zip(trainer.last_batch.batch["responses"].tolist(),
                                    trainer.last_batch.batch["response_mask"].sum(-1).tolist())],
        skip_special_tokens=True)
    assert metrics["critic/score/mean"] == pytest.approx(sum(map(len, responses)) / len(responses))


def test_cached_async_clients_stay_on_one_loop(tiny_model_dir, toy_data, tmp_path, batch_maker, tokenizer,
                                             monkeypatch):
    """An async scorer that caches a loop-bound client (an aiohttp session, a semaphore) on its first call keeps using
    it: every call runs on verl's one event loop, whichever thread scores -- the step's scoring thread (a new one each
    step), the one-step off-policy rollout thread, or the caller's for validation and a manager called by hand."""

    class CachingScorer:
        def __init__(self) -> None:
            self.loop = None
            self.calls = 0

        async def __call__(self, response):
            loop = asyncio.get_running_loop()
            self.loop = self.loop or loop
            assert loop is self.loop, "the scorer's cached client would be bound to another loop"
            self.calls += 1
            return float(len(response) % 3)

    monkeypatch.setenv("VERL_FILE_LOGGER_ROOT", str(tmp_path))  # fit() writes its metrics file there
    scorer = CachingScorer()
    for hybrid in (True, False):
        cfg = RLConfig(overrides=[*toy_overrides(tiny_model_dir, str(tmp_path / str(hybrid)), "grpo", 2),
                                  f"actor_rollout_ref.hybrid_engine={hybrid}", "trainer.test_freq=1"])
        trainer = PPOTrainer(config=cfg, reward_fn=scorer, train_dataset=toy_data["train"],
                             val_dataset=toy_data["test"])
        trainer.fit()
    NaiveRewardManager(tokenizer, 0, scorer)(batch(batch_maker))
    assert scorer.calls > 2 * 2 * 16


def test_nested_coroutines_from_synchronous_code_do_not_deadlock():
    """A coroutine on verl's loop calling synchronous code that runs a coroutine, itself calling synchronous code
    that runs one: each inner one gets a loop of its own instead of waiting on a loop that is blocked."""
    import threading

    from verl.utils.async_run import run_coroutine

    async def innermost():
        return 3

    async def middle():
        return run_coroutine(innermost()) + 1

    async def outer():
        return run_coroutine(middle()) + 1

    out = {}
    worker = threading.Thread(target=lambda: out.setdefault("value", run_coroutine(outer())), daemon=True)
    worker.start()
    worker.join(20)
    assert out.get("value") == 5, "deadlocked"
