"""adv_estimator=optimal_token_baseline / tir_optimal_token_baseline through the C++ trainer (issue 16 item 3):
the old-log-prob pass gives sum_pi_squared when actor.calculate_sum_pi_squared=True, and the advantages are
verl 0.9.1's own function's (loaded from its unpacked wheel as in test_core_algos_verl091_parity.py) on the
batch the step saw, with old_log_probs, sum_pi_squared and, under rollout correction, rollout_is_weights."""

from __future__ import annotations

import pytest
import torch

import verl
from verl import PPOTrainer, RLConfig

from test_core_algos_verl091_parity import verl091  # noqa: F401  (the fixture: verl 0.9.1's functions)
from trainer_helpers import toy_overrides

VERL_FUNCTION = {"optimal_token_baseline": "compute_optimal_token_baseline_advantage",
                 "tir_optimal_token_baseline": "compute_multi_turn_optimal_token_baseline_advantage"}


def length_reward(response: str) -> float:
    return float(len(response.strip())) / 10.0


def make_trainer(tiny_model_dir, toy_data, tmp_path, estimator, extra):
    cfg = RLConfig(overrides=[*toy_overrides(tiny_model_dir, str(tmp_path), estimator, 1), *extra])
    return PPOTrainer(config=cfg, reward_fn=length_reward, train_dataset=toy_data["train"])


@pytest.mark.parametrize("estimator", sorted(VERL_FUNCTION))
@pytest.mark.parametrize("rollout_is", [False, True])
def test_otb_advantages_are_verls_from_the_step_batch(tiny_model_dir, toy_data, tmp_path, verl091, estimator,
                                                      rollout_is):
    extra = ["actor_rollout_ref.actor.calculate_sum_pi_squared=true"]
    if rollout_is:
        # a threshold below the weights' range clips some, so the truncated IS weights differ from 1
        extra += ["algorithm.rollout_correction.rollout_is=token",
                  "algorithm.rollout_correction.rollout_is_threshold=1.0"]
    trainer = make_trainer(tiny_model_dir, toy_data, tmp_path, estimator, extra)
    rollouts = trainer.collect_rollouts([trainer.train_dataset[i] for i in range(4)])
    trainer.compute_rewards(rollouts)
    trainer.optimize(rollouts)
    last = trainer.last_batch
    mask = last.batch["response_mask"]
    spp = last.batch["sum_pi_squared"]
    assert spp.dtype == torch.float32 and spp.shape == mask.shape
    # a sum of squared probabilities: in [1/V, 1] at response tokens, 0 at padding
    vocab = trainer.model.config["vocab_size"]
    real = spp[mask.bool()]
    assert real.min().item() >= 1.0 / vocab * (1 - 1e-5) and real.max().item() <= 1.0 + 1e-6
    assert (spp * (1 - mask)).abs().max().item() == 0.0
    weights = last.batch["rollout_is_weights"] if rollout_is else None
    if rollout_is:
        assert not torch.all(weights[mask.bool()] == 1.0)
    else:
        assert "rollout_is_weights" not in last.batch.keys()
    # verl's compute_advantage call for these estimators
    expected, returns = getattr(verl091, VERL_FUNCTION[estimator])(
        token_level_rewards=last.batch["token_level_rewards"], response_mask=mask,
        index=last.non_tensor_batch["uid"], config=None, old_log_probs=last.batch["old_log_probs"],
        sum_pi_squared=spp, rollout_is_weights=weights)
    assert torch.equal(last.batch["advantages"], expected)
    assert torch.equal(last.batch["returns"], returns)
    assert expected.abs().max().item() > 0  # the rewards differ within groups: a real baseline, not all zeros


def test_otb_requires_sum_pi_squared(tiny_model_dir, toy_data, tmp_path):
    with pytest.raises(verl.ConfigError, match="calculate_sum_pi_squared=True"):
        make_trainer(tiny_model_dir, toy_data, tmp_path, "optimal_token_baseline", [])


def test_sum_pi_squared_only_when_asked(tiny_model_dir, toy_data, tmp_path):
    trainer = make_trainer(tiny_model_dir, toy_data, tmp_path, "grpo", [])
    rollouts = trainer.collect_rollouts([trainer.train_dataset[i] for i in range(4)])
    trainer.compute_rewards(rollouts)
    trainer.optimize(rollouts)
    assert "sum_pi_squared" not in trainer.last_batch.batch.keys()
