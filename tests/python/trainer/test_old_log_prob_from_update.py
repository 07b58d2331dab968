"""actor_rollout_ref.actor.old_log_prob_from_update (issue 17 item 5): where the actor update is on-policy (one epoch
of one mini-batch, cut into micro-batches as the log-prob pass cuts them) and nothing reads old_log_probs before it,
the update's own first forward gives them and the pass is skipped -- with every number of the step unchanged, bit for
bit, against the run that recomputes them."""

from __future__ import annotations

import math

import pytest
import torch

from verl import PPOTrainer, RLConfig

from trainer_helpers import toy_overrides

# One mini-batch of the whole batch (4 prompts x n = 4), the pass's micro-batches of 8 rows in the update too.
ON_POLICY = ["actor_rollout_ref.actor.ppo_mini_batch_size=4", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8",
             "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8"]
RECOMPUTE = "actor_rollout_ref.actor.old_log_prob_from_update=false"
PASS_ONLY = {"timing_s/old_log_prob", "perf/mfu/actor_infer", "timing_per_token_ms/old_log_prob"}


def length_reward(response: str) -> float:
    return float(len(response.strip())) / 10.0


def run(tiny_model_dir, toy_data, tmp_path, extra, estimator="grpo", steps=2):
    cfg = RLConfig(overrides=[*toy_overrides(tiny_model_dir, str(tmp_path), estimator, steps), *extra])
    trainer = PPOTrainer(config=cfg, reward_fn=length_reward, train_dataset=toy_data["train"])
    metrics = [trainer.step([trainer.train_dataset[4 * s + i] for i in range(4)]) for s in range(steps)]
    return trainer, metrics


def timed(key: str) -> bool:
    return key.startswith(("timing_s/", "timing_per_token_ms/", "perf/mfu/")) or key in (
        "perf/time_per_step", "perf/throughput")


@pytest.mark.parametrize("estimator, extra", [
    ("grpo", []),
    ("gae", ["actor_rollout_ref.actor.use_kl_loss=true"]),  # with a critic and the reference policy
    ("grpo", ["actor_rollout_ref.actor.use_dynamic_bsz=true", "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=96"]),
])
def test_skipping_the_pass_changes_no_number(tiny_model_dir, toy_data, tmp_path, estimator, extra):
    fused, m_fused = run(tiny_model_dir, toy_data, tmp_path / "fused", [*ON_POLICY, *extra], estimator)
    separate, m_separate = run(tiny_model_dir, toy_data, tmp_path / "separate", [*ON_POLICY, *extra, RECOMPUTE],
                               estimator)
    for step_fused, step_separate in zip(m_fused, m_separate):
        assert "timing_s/old_log_prob" in step_separate and "timing_s/old_log_prob" not in step_fused
        assert set(step_fused) == set(step_separate) - PASS_ONLY, set(step_fused) ^ (set(step_separate) - PASS_ONLY)
        for key, value in step_fused.items():
            if not timed(key):
                assert value == step_separate[key] or (math.isnan(value) and math.isnan(step_separate[key])), key
        assert step_fused["actor/ppo_kl"] == 0.0  # on-policy: the ratio starts at exactly 1
        assert step_fused["training/rollout_probs_diff_max"] < 1e-4
    assert torch.equal(fused.last_batch.batch["old_log_probs"], separate.last_batch.batch["old_log_probs"])
    want = separate._trainer.actor_model.state_dict()
    for name, tensor in fused._trainer.actor_model.state_dict().items():
        assert torch.equal(tensor, want[name]), name


@pytest.mark.parametrize("extra", [
    [],  # two mini-batches of 2 prompts (toy_overrides): the second is off-policy
    [*ON_POLICY, "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4"],  # the pass cuts micro-batches of 8
    [*ON_POLICY, "actor_rollout_ref.actor.ppo_epochs=2"],
    [*ON_POLICY, "actor_rollout_ref.actor.shuffle=true"],
    [*ON_POLICY, "actor_rollout_ref.actor.use_kl_loss=true", "algorithm.use_kl_in_reward=true"],  # read before
    [*ON_POLICY, "algorithm.rollout_correction.rollout_is=token"],  # IS weights from old_log_probs, before
    [*ON_POLICY, RECOMPUTE],
])
def test_the_pass_runs_where_the_update_cannot_stand_in(tiny_model_dir, toy_data, tmp_path, extra):
    _, metrics = run(tiny_model_dir, toy_data, tmp_path, extra, steps=1)
    assert "timing_s/old_log_prob" in metrics[0] and "perf/mfu/actor_infer" in metrics[0]


def test_critic_warmup_steps_run_the_pass(tiny_model_dir, toy_data, tmp_path):
    # the actor does not update in a warm-up step, so it cannot give old_log_probs; after it, it does
    _, metrics = run(tiny_model_dir, toy_data, tmp_path, [*ON_POLICY, "trainer.critic_warmup=2"], "gae")
    assert "timing_s/old_log_prob" in metrics[0] and "actor/pg_loss" not in metrics[0]
    assert "timing_s/old_log_prob" not in metrics[1] and "actor/entropy" in metrics[1]
