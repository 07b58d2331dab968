"""algorithm.rollout_correction (verl's decoupled mode) and algorithm.use_pf_ppo through the C++ trainer
(issue 16 item 3), checked on the trainer's final batch (``PPOTrainer.last_batch``) against the rollout
correction helper and by PF-PPO's defining property."""

from __future__ import annotations

import pytest
import torch

import verl
from verl import PPOTrainer, RLConfig
from verl.trainer.ppo import rollout_corr_helper

from trainer_helpers import toy_overrides


def digit_fraction(response: str) -> float:
    return sum(c.isdigit() for c in response) / max(len(response), 1)


def make_trainer(tiny_model_dir, toy_data, tmp_path, estimator, extra):
    cfg = RLConfig(overrides=[*toy_overrides(tiny_model_dir, str(tmp_path), estimator, 1), *extra])
    return PPOTrainer(config=cfg, reward_fn=digit_fraction, train_dataset=toy_data["train"])


def rollouts_of(trainer):
    rows = [trainer.train_dataset[i] for i in range(4)]
    rollouts = trainer.collect_rollouts(rows)
    trainer.compute_rewards(rollouts)
    return rollouts


CORRECTION = ["algorithm.rollout_correction.rollout_is=token", "algorithm.rollout_correction.rollout_is_threshold=2.0",
              "algorithm.rollout_correction.rollout_rs=token_k1", "algorithm.rollout_correction.rollout_rs_threshold=2.0"]


def test_rollout_correction_weights_and_rejects_against_the_rollout(tiny_model_dir, toy_data, tmp_path):
    trainer = make_trainer(tiny_model_dir, toy_data, tmp_path, "grpo", CORRECTION)
    rollouts = rollouts_of(trainer)
    mask = rollouts.batch["response_mask"].clone()
    # The engine's log-probs equal the recomputed ones (fp32); make the even rows' rollout policy e times less
    # likely on every token: their ratio pi_old / pi_rollout ~ e > 2 is truncated to 2, and token_k1 = -1 lies
    # below log(1/2), so those rows are rejected whole.
    rollout_lp = rollouts.batch["rollout_log_probs"].clone()
    rollout_lp[0::2] -= 1.0
    rollouts.batch["rollout_log_probs"] = rollout_lp
    metrics = trainer.optimize(rollouts)
    last = trainer.last_batch

    even = torch.zeros(mask.shape[0], dtype=torch.bool)
    even[0::2] = True
    kept = last.batch["response_mask"]
    assert torch.equal(kept[even], torch.zeros_like(kept[even]))
    assert torch.equal(kept[~even], mask[~even])
    weights = last.batch["rollout_is_weights"]
    assert torch.equal(weights[even], 2.0 * mask[even].to(weights.dtype))
    assert torch.allclose(weights[~even], mask[~even].to(weights.dtype), atol=1e-4, rtol=0)
    # exactly what the helper computes from the trainer's recomputed old log-probs
    w, m, expected = rollout_corr_helper.compute_rollout_correction_and_rejection_mask(
        last.batch["old_log_probs"], rollout_lp, mask, "token", 2.0, False, "token_k1", 2.0)
    assert torch.equal(weights, w.batch["rollout_is_weights"]) and torch.equal(kept, m)
    for key, value in expected.items():
        assert metrics[key] == value, key
    share = float(mask[even].sum() / mask.sum())
    assert metrics["rollout_corr/rollout_rs_masked_fraction"] == pytest.approx(share, abs=1e-6)
    assert metrics["rollout_corr/rollout_is_ratio_fraction_high"] == pytest.approx(share, abs=1e-6)
    assert metrics["rollout_corr/kl"] == pytest.approx(-share, abs=1e-4)  # E[log pi_rollout - log pi_old]


def test_rollout_correction_metrics_by_default(tiny_model_dir, toy_data, tmp_path):
    # verl computes the off-policy diagnostics whenever the batch has rollout log-probs; nothing is rejected
    trainer = make_trainer(tiny_model_dir, toy_data, tmp_path, "grpo", [])
    rollouts = rollouts_of(trainer)
    mask = rollouts.batch["response_mask"].clone()
    metrics = trainer.optimize(rollouts)
    assert torch.equal(trainer.last_batch.batch["response_mask"], mask)
    assert "rollout_is_weights" not in trainer.last_batch.batch
    assert abs(metrics["rollout_corr/kl"]) < 1e-5 and abs(metrics["rollout_corr/chi2_token"]) < 1e-4
    assert "rollout_corr/rollout_rs_masked_fraction" not in metrics


def test_pf_ppo_resamples_the_batch_by_reward(tiny_model_dir, toy_data, tmp_path):
    extra = ["algorithm.use_pf_ppo=true", "algorithm.pf_ppo.reweight_method=max_min"]
    lasts = []
    for run in range(2):
        trainer = make_trainer(tiny_model_dir, toy_data, tmp_path / str(run), "gae", extra)
        rollouts = rollouts_of(trainer)
        scores = rollouts.batch["token_level_scores"].sum(-1)
        assert scores.max() > scores.min()  # the reward separates the rows, so max_min has work to do
        source = {tuple(r.tolist()): s for r, s in zip(rollouts.batch["responses"], scores.tolist())}
        trainer.optimize(rollouts)
        last = trainer.last_batch
        assert len(last) == len(rollouts)
        drawn = last.batch["token_level_scores"].sum(-1)
        # max_min weighs the highest- and lowest-scored rows 1 and the rest 1e-8: only those are drawn
        assert set(drawn.tolist()) <= {scores.max().item(), scores.min().item()}
        for response, score in zip(last.batch["responses"], drawn.tolist()):
            assert source[tuple(response.tolist())] == score  # whole rows move together
        lasts.append(last.batch["responses"])
    assert torch.equal(lasts[0], lasts[1])  # seeded from rollout.seed and the step


@pytest.mark.parametrize("setting, match", [
    (["algorithm.use_pf_ppo=true"], "algorithm.use_pf_ppo: PF-PPO resamples the batch after GAE only"),
    (["algorithm.use_pf_ppo=true", "algorithm.adv_estimator=gae", "algorithm.pf_ppo.reweight_method=softmax"],
     "reweight_method must be pow, max_min or max_random"),
    (["algorithm.rollout_correction.rollout_rs=token_k1"], "rollout_rs_threshold must be set"),
    (["algorithm.rollout_correction.rollout_is=geometric"], "rollout_is must be null, token or sequence"),
])
def test_bad_settings_are_config_errors(tiny_model_dir, toy_data, tmp_path, setting, match):
    with pytest.raises(verl.ConfigError, match=match):
        make_trainer(tiny_model_dir, toy_data, tmp_path, "grpo", setting)
