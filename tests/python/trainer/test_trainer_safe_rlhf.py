"""Safe-RLHF (PPO-Lagrangian) through the C++ trainer (issue 20 item 3): a cost function beside the reward, reward and
cost critics under gae, the advantage (A_r - lambda A_c) / (1 + lambda) and the multiplier
lambda <- clamp(lambda + lambda_lr (mean cost - cost_limit), 0, lambda_max) each step (algorithm.safe_rlhf.*)."""

from __future__ import annotations

import math

import pytest
import torch

import verl
from verl import PPOTrainer, RLConfig
from verl.trainer.ppo import core_algos

from trainer_helpers import toy_overrides

ODD = set("13579")


def digit_fraction(response: str) -> float:
    return sum(c.isdigit() for c in response) / max(len(response), 1)


def odd_digit_fraction(response: str) -> float:
    """The cost: the share of characters that are odd digits (a costly kind of the behaviour the reward wants)."""
    return sum(c in ODD for c in response) / max(len(response), 1)


def wall_clock_dependent(key: str) -> bool:
    return key.startswith(("timing_s/", "timing_per_token_ms/", "perf/mfu/")) or key in (
        "perf/time_per_step", "perf/throughput")


def steps(trainer, toy_data, n):
    from verl.utils.dataset import create_rl_dataloader

    loader = create_rl_dataloader(trainer.train_dataset, trainer.config.data, train=True)
    history = []
    while len(history) < n:
        for batch in loader:
            history.append(dict(trainer.step(batch)))
            if len(history) == n:
                break
    return history


def make(tiny_model_dir, toy_data, tmp_path, estimator, n, extra=(), cost_fn=None, reward_fn=digit_fraction):
    cfg = RLConfig(overrides=[*toy_overrides(tiny_model_dir, str(tmp_path), estimator, n), *extra])
    return PPOTrainer(config=cfg, reward_fn=reward_fn, train_dataset=toy_data["train"], cost_fn=cost_fn)


SAFE = ["algorithm.safe_rlhf.enable=true", "algorithm.safe_rlhf.cost_limit=0.01", "algorithm.safe_rlhf.lambda_init=0.5",
        "algorithm.safe_rlhf.lambda_lr=2.0", "algorithm.safe_rlhf.lambda_max=5.0"]


def test_lambda_update_and_advantage_follow_the_formulas(tiny_model_dir, toy_data, tmp_path):
    """gae with reward and cost critics: every step's lambda is the projected ascent step from the last one on the
    step's mean cost, and the advantages are (A_r - lambda A_c) / (1 + lambda) of the two critics' GAE."""
    trainer = make(tiny_model_dir, toy_data, tmp_path, "gae", 3, SAFE, cost_fn=odd_digit_fraction)
    assert trainer._trainer.cost_critic_model is not None and trainer._trainer.critic_model is not None
    lam = 0.5
    history = steps(trainer, toy_data, 3)
    for m in history:
        lam = min(max(lam + 2.0 * (m["safe_rlhf/cost/mean"] - 0.01), 0.0), 5.0)
        assert m["safe_rlhf/lambda"] == pytest.approx(lam, rel=1e-12, abs=1e-15)
        assert m["safe_rlhf/cost_violation"] == pytest.approx(m["safe_rlhf/cost/mean"] - 0.01, rel=1e-12)
        for key in ("cost_critic/vf_loss", "cost_critic/grad_norm", "critic/vf_loss"):
            assert math.isfinite(m[key]), key
    assert trainer._trainer.safe_rlhf_lambda == pytest.approx(lam, rel=1e-12)
    last = trainer.last_batch
    b = last.batch
    costs = b["token_level_costs"]
    assert float(costs.sum(-1).mean()) == pytest.approx(history[-1]["safe_rlhf/cost/mean"], rel=1e-5)
    mask = b["response_mask"]
    a_r, _ = core_algos.compute_gae_advantage_return(b["token_level_rewards"], b["values"], mask, 1.0, 1.0)
    a_c, ret_c = core_algos.compute_gae_advantage_return(costs, b["cost_values"], mask, 1.0, 1.0)
    torch.testing.assert_close(b["cost_returns"], ret_c, rtol=0, atol=1e-6)
    torch.testing.assert_close(b["advantages"], (a_r - lam * a_c) / (1 + lam), rtol=0, atol=1e-6)


def test_disabled_equals_plain_ppo_bit_for_bit(tiny_model_dir, toy_data, tmp_path):
    """enable=false (other safe_rlhf keys changed) runs plain PPO: every metric and weight equal, no cost critic."""
    plain = make(tiny_model_dir, toy_data, tmp_path / "a", "gae", 2)
    off = make(tiny_model_dir, toy_data, tmp_path / "b", "gae", 2,
               ["algorithm.safe_rlhf.cost_limit=0.3", "algorithm.safe_rlhf.lambda_init=2.0"])
    assert off._trainer.cost_critic_model is None
    for a, b in zip(steps(plain, toy_data, 2), steps(off, toy_data, 2)):
        assert a.keys() == b.keys() and not any(k.startswith("safe_rlhf/") for k in a)
        for key in a:
            if not wall_clock_dependent(key):
                assert a[key] == b[key] or (math.isnan(a[key]) and math.isnan(b[key])), key
    for name, tensor in plain._trainer.actor_model.state_dict().items():
        assert torch.equal(tensor, off._trainer.actor_model.state_dict()[name]), name


def test_constraint_holds_while_the_reward_rises(tiny_model_dir, toy_data, tmp_path):
    """The reward wants digits, the cost counts odd ones: GRPO alone drives the cost up with the reward (measured:
    mean cost 0.02 -> 0.93 in 12 steps); with the multiplier (lambda up to ~3.3 on the way) the run ends with mean
    cost <= cost_limit (measured 0.0) while the reward still rises (0.02 -> 0.84)."""
    # A learning curve on a random model follows the rounding of every float sum: pinned to 2 torch threads (the CI
    # machine's count; the conftest restores the count after the test), the run is the same on any machine.
    torch.set_num_threads(2)
    n = 12
    limit = 0.05
    common = ["actor_rollout_ref.actor.optim.lr=0.03", "trainer.total_epochs=4"]
    plain = make(tiny_model_dir, toy_data, tmp_path / "plain", "grpo", n, common)
    steps(plain, toy_data, n)
    responses = plain.tokenizer.batch_decode(plain.last_batch.batch["responses"], skip_special_tokens=True)
    assert sum(map(odd_digit_fraction, responses)) / len(responses) > 4 * limit  # the reward leads to the cost
    extra = ["algorithm.safe_rlhf.enable=true", f"algorithm.safe_rlhf.cost_limit={limit}",
             "algorithm.safe_rlhf.lambda_init=1.0", "algorithm.safe_rlhf.lambda_lr=20.0", *common]
    trainer = make(tiny_model_dir, toy_data, tmp_path / "safe", "grpo", n, extra, cost_fn=odd_digit_fraction)
    history = steps(trainer, toy_data, n)
    rewards = [m["critic/score/mean"] for m in history]
    costs = [m["safe_rlhf/cost/mean"] for m in history]
    assert sum(rewards[-2:]) / 2 - sum(rewards[:2]) / 2 >= 0.3, (rewards, costs)
    assert costs[-1] <= limit and sum(costs[-2:]) / 2 <= limit, (rewards, costs)
    assert max(m["safe_rlhf/lambda"] for m in history) > 2.0  # the constraint was active on the way


@pytest.mark.parametrize("extra, cost, match", [
    (["algorithm.safe_rlhf.enable=true"], None, "needs exactly one cost source"),
    ([], odd_digit_fraction, "cost_fn was given but algorithm.safe_rlhf.enable is false"),
    (["algorithm.safe_rlhf.enable=true", "algorithm.safe_rlhf.lambda_lr=-1"], odd_digit_fraction, "lambda_lr must be"),
    (["algorithm.safe_rlhf.enable=true", "algorithm.safe_rlhf.lambda_max=0.5"], odd_digit_fraction,
     "lambda_max must be null or >= lambda_init"),
])
def test_safe_rlhf_settings_are_checked(tiny_model_dir, toy_data, tmp_path, extra, cost, match):
    with pytest.raises(verl.ConfigError, match=match):
        make(tiny_model_dir, toy_data, tmp_path, "grpo", 1, extra, cost_fn=cost)


def test_remax_has_no_cost_form(tiny_model_dir, toy_data, tmp_path):
    with pytest.raises(verl.ConfigError, match="adv_estimator=remax"):
        make(tiny_model_dir, toy_data, tmp_path, "remax", 1, ["algorithm.safe_rlhf.enable=true"],
             cost_fn=odd_digit_fraction)


def test_lambda_and_cost_critic_survive_a_checkpoint(tiny_model_dir, toy_data, tmp_path):
    trainer = make(tiny_model_dir, toy_data, tmp_path, "gae", 1, SAFE, cost_fn=odd_digit_fraction)
    steps(trainer, toy_data, 1)
    path = trainer.save_checkpoint()
    resumed = make(tiny_model_dir, toy_data, tmp_path, "gae", 1, SAFE, cost_fn=odd_digit_fraction)
    assert resumed._trainer.safe_rlhf_lambda == 0.5  # lambda_init before the load
    resumed.load_checkpoint(path)
    assert resumed._trainer.safe_rlhf_lambda == trainer._trainer.safe_rlhf_lambda != 0.5
    for name, tensor in trainer._trainer.cost_critic_model.state_dict().items():
        assert torch.equal(tensor, resumed._trainer.cost_critic_model.state_dict()[name]), name


def test_the_cost_from_the_command_line(tiny_model_dir, toy_data, tmp_path):
    """algorithm.safe_rlhf.cost_function.{path,name}: main_ppo's Safe-RLHF, the cost file in custom_reward_function's
    form; each step's cost mean is the function's mean over the batch, and lambda follows it."""
    import json
    import os
    import subprocess
    import sys

    scorer = tmp_path / "score.py"
    scorer.write_text("def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n"
                      "    return sum(c.isdigit() for c in solution_str) / max(len(solution_str), 1)\n"
                      "def odd_cost(data_source, solution_str, ground_truth, extra_info=None):\n"
                      "    return sum(c in '13579' for c in solution_str) / max(len(solution_str), 1)\n")
    overrides = [*toy_overrides(tiny_model_dir, str(tmp_path), "grpo", 2), f"data.train_files={toy_data['train']}",
                 "data.val_files=null", f"custom_reward_function.path={scorer}", *SAFE,
                 f"algorithm.safe_rlhf.cost_function.path={scorer}", "algorithm.safe_rlhf.cost_function.name=odd_cost"]
    result = subprocess.run([sys.executable, "-m", "verl.trainer.main_ppo", *overrides], capture_output=True,
                            text=True, cwd=tmp_path, env={**os.environ}, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    steps = [json.loads(line) for line in (tmp_path / "proj" / "exp.jsonl").read_text().splitlines()]
    assert len(steps) == 2
    lam = 0.5
    for step in steps:
        metrics = step["data"]
        lam = min(5.0, max(0.0, lam + 2.0 * (metrics["safe_rlhf/cost/mean"] - 0.01)))
        assert metrics["safe_rlhf/lambda"] == pytest.approx(lam, rel=1e-9, abs=1e-12)
    # enable=true with neither source names both command-line keys
    proc = subprocess.run([sys.executable, "-m", "verl.trainer.main_ppo", *overrides[:-2]], capture_output=True,
                          text=True, cwd=tmp_path, timeout=600)
    assert proc.returncode != 0 and "algorithm.safe_rlhf.cost_function.path" in proc.stderr, proc.stderr[-2000:]
