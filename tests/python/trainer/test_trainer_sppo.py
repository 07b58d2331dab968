"""SPPO through the C++ trainer (issue 20 item 2; verl's recipe/sppo): algorithm.adv_estimator=sppo gives each
response eta * (P(it beats the other responses of its prompt) - 1/2) with Bradley-Terry preferences of the reward
scores, and actor policy_loss.loss_mode=sppo regresses the sequence log-ratio against the generating policy onto it."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import verl
from verl import PPOTrainer, RLConfig

from trainer_helpers import toy_overrides

SPPO = ["actor_rollout_ref.actor.policy_loss.loss_mode=sppo"]


def digit_fraction(response: str) -> float:
    return sum(c.isdigit() for c in response) / max(len(response), 1)


def make_trainer(tiny_model_dir, toy_data, tmp_path, extra=(), steps=1):
    cfg = RLConfig(overrides=[*toy_overrides(tiny_model_dir, str(tmp_path), "sppo", steps), *SPPO, *extra])
    return PPOTrainer(config=cfg, reward_fn=digit_fraction, train_dataset=toy_data["train"])


def reference_targets(scores: np.ndarray, uids: np.ndarray, eta: float) -> np.ndarray:
    """eta * (mean over the other responses of the prompt of 1 / (1 + exp(s_j - s_i)) - 1/2), in float64."""
    out = np.empty(len(scores))
    for i in range(len(scores)):
        others = [j for j in range(len(scores)) if j != i and uids[j] == uids[i]]
        p = np.mean([1.0 / (1.0 + math.exp(scores[j] - scores[i])) for j in others]) if others else 0.5
        out[i] = eta * (p - 0.5)
    return out


def test_sppo_step_targets_are_win_rates_of_the_prompt_group(tiny_model_dir, toy_data, tmp_path):
    eta = 3.0
    trainer = make_trainer(tiny_model_dir, toy_data, tmp_path, [f"algorithm.sppo_eta={eta}"])
    metrics = trainer.step([trainer.train_dataset[i] for i in range(4)])
    last = trainer.last_batch
    scores = last.batch["token_level_rewards"].sum(-1).double().numpy()
    uids = last.non_tensor_batch["uid"]
    assert len(set(uids)) == 4 and np.unique(scores).size > 2  # 4 prompts x 4 responses with different rewards
    expected = reference_targets(scores, uids, eta)
    mask = last.batch["response_mask"].double()
    torch.testing.assert_close(last.batch["advantages"].double(), torch.from_numpy(expected)[:, None] * mask,
                               rtol=0, atol=1e-6)
    # a group's win rates average to 1/2, so its targets sum to 0
    for uid in set(uids):
        assert abs(expected[uids == uid].sum()) < 1e-12
    for key in ("actor/pg_loss", "actor/log_ratio_mean", "actor/preference_mean", "actor/grad_norm"):
        assert math.isfinite(metrics[key]), key
    assert "critic/vf_loss" not in metrics  # no critic: SPPO needs none


@pytest.mark.parametrize("extra, match", [
    (["algorithm.sppo_eta=0"], "algorithm.sppo_eta must be > 0"),
    (["algorithm.rollout_correction.rollout_is=token"], "loss_mode=sppo takes no rollout importance weights"),
    (["actor_rollout_ref.actor.loss_agg_mode=seq-mean-token-sum"], "loss_agg_mode=seq-mean-token-sum has no effect"),
])
def test_sppo_settings_are_checked(tiny_model_dir, toy_data, tmp_path, extra, match):
    with pytest.raises(verl.ConfigError, match=match):
        make_trainer(tiny_model_dir, toy_data, tmp_path, extra)


def test_sppo_eta_without_sppo_is_refused(tiny_model_dir, toy_data, tmp_path):
    cfg = RLConfig(overrides=[*toy_overrides(tiny_model_dir, str(tmp_path), "grpo", 1), "algorithm.sppo_eta=2"])
    with pytest.raises(verl.ConfigError, match="algorithm.sppo_eta is read by adv_estimator=sppo only.*grpo"):
        PPOTrainer(config=cfg, reward_fn=digit_fraction, train_dataset=toy_data["train"])


def test_sppo_learns_the_toy_reward(tiny_model_dir, toy_data, tmp_path):
    """Fixed seed: SPPO raises the mean digit fraction (about 0.02 at the start: 10 digit tokens of 304) by at
    least 0.3 within 8 steps (measured: 0.02 -> 0.78). The reward is 10x the fraction, so that a response with a
    few more digits is clearly preferred (Bradley-Terry on score differences)."""
    steps = 8
    cfg = RLConfig(overrides=[*toy_overrides(tiny_model_dir, str(tmp_path), "sppo", steps), *SPPO,
                              "algorithm.sppo_eta=10", "trainer.total_epochs=4", "actor_rollout_ref.actor.optim.lr=0.03"])
    trainer = PPOTrainer(config=cfg, reward_fn=lambda response: 10 * digit_fraction(response),
                         train_dataset=toy_data["train"])
    from verl.utils.dataset import create_rl_dataloader

    loader = create_rl_dataloader(trainer.train_dataset, trainer.config.data, train=True)
    rewards = []
    while len(rewards) < steps:
        for batch in loader:
            rewards.append(trainer.step(batch)["critic/score/mean"] / 10)
            if len(rewards) == steps:
                break
    first, last = sum(rewards[:2]) / 2, sum(rewards[-2:]) / 2
    assert last - first >= 0.3, rewards
