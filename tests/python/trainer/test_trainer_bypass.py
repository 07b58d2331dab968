"""algorithm.rollout_correction.bypass_mode through the C++ trainer (issue 16 item 3), as verl 0.9.1's
apply_bypass_mode: the rollout's log-probs are old_log_probs (no old-log-prob pass), the actor's loss is
"bypass_mode" with the rollout correction (loss_type ppo_clip or reinforce), and the decoupled correction
before the advantage is skipped."""

from __future__ import annotations

import math

import pytest
import torch

import verl
from verl import PPOTrainer, RLConfig

from trainer_helpers import toy_overrides

BYPASS = "algorithm.rollout_correction.bypass_mode=true"


def length_reward(response: str) -> float:
    return float(len(response.strip())) / 10.0


def make_trainer(tiny_model_dir, toy_data, tmp_path, extra, estimator="grpo"):
    cfg = RLConfig(overrides=[*toy_overrides(tiny_model_dir, str(tmp_path), estimator, 1), *extra])
    return PPOTrainer(config=cfg, reward_fn=length_reward, train_dataset=toy_data["train"])


def one_step(trainer):
    rollouts = trainer.collect_rollouts([trainer.train_dataset[i] for i in range(4)])
    trainer.compute_rewards(rollouts)
    return trainer.optimize(rollouts), trainer.last_batch


def test_bypass_uses_the_rollout_log_probs_as_old_log_probs(tiny_model_dir, toy_data, tmp_path):
    metrics, last = one_step(make_trainer(tiny_model_dir, toy_data, tmp_path, [BYPASS]))
    assert torch.equal(last.batch["old_log_probs"], last.batch["rollout_log_probs"])
    # no old-log-prob pass: none of its metrics or timing; no decoupled IS weights reach the actor
    assert "actor/entropy" not in metrics and "perf/mfu/actor_infer" not in metrics
    assert "timing_s/old_log_prob" not in metrics
    assert "rollout_is_weights" not in last.batch.keys()
    # the actor's bypass_mode loss reports the correction's diagnostics (current policy vs the rollout's)
    assert any(k.startswith("rollout_corr/") for k in metrics), sorted(metrics)
    assert math.isfinite(metrics["actor/grad_norm"]) and metrics["actor/grad_norm"] > 0


def test_bypass_loss_types(tiny_model_dir, toy_data, tmp_path):
    # ppo_clip with old = the rollout's log-probs: the first mini-batch's ratio is ~1 (the recomputed log-probs equal
    # the engine's to float rounding), so the clipped loss is ~ -mean(A) as in the recomputing trainer; reinforce is
    # -A * log_prob, another loss.
    ppo_clip, _ = one_step(make_trainer(tiny_model_dir, toy_data, tmp_path / "a", [BYPASS]))
    recompute, _ = one_step(make_trainer(tiny_model_dir, toy_data, tmp_path / "b", []))
    assert "timing_s/old_log_prob" in recompute and "actor/entropy" in recompute  # what bypass mode goes without
    assert ppo_clip["actor/pg_loss"] == pytest.approx(recompute["actor/pg_loss"], rel=1e-3, abs=1e-5)
    assert ppo_clip["actor/grad_norm"] == pytest.approx(recompute["actor/grad_norm"], rel=1e-3)
    reinforce, _ = one_step(make_trainer(tiny_model_dir, toy_data, tmp_path / "c",
                                         [BYPASS, "algorithm.rollout_correction.loss_type=reinforce",
                                          "algorithm.rollout_correction.rollout_is=token"]))
    assert reinforce["actor/grad_norm"] != pytest.approx(ppo_clip["actor/grad_norm"], rel=1e-2)


@pytest.mark.parametrize("extra, estimator, match", [
    ([BYPASS, "algorithm.rollout_correction.loss_type=ppo"], "grpo", "loss_type must be ppo_clip or reinforce"),
    (["algorithm.rollout_correction.loss_type=reinforce"], "grpo", "loss_type = 'reinforce' is read in bypass mode"),
    ([BYPASS, "actor_rollout_ref.actor.calculate_sum_pi_squared=true"], "optimal_token_baseline",
     "bypass_mode=true skips"),
])
def test_bypass_settings_are_checked(tiny_model_dir, toy_data, tmp_path, extra, estimator, match):
    with pytest.raises(verl.ConfigError, match=match):
        make_trainer(tiny_model_dir, toy_data, tmp_path, extra, estimator)
