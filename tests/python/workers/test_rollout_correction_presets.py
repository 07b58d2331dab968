"""RolloutCorrectionConfig's named presets (verl 0.9.1's factories), and what each one does to a batch of two
sequences when its fields go to the rollout-correction helper the actor's policy loss relies on.

Sequence 0 has the same log-probs under the rollout and the training policy; sequence 1's training log-prob is 0.2
higher on each of its 3 tokens: its sequence IS weight is exp(0.6) = 1.822, its geometric-mean ratio exp(0.2) =
1.221, its mean K3 divergence exp(0.2) - 1 - 0.2 = 0.0214."""

import math

import pytest
import torch

from verl.trainer.config import RolloutCorrectionConfig as RC
from verl.trainer.ppo.rollout_corr_helper import compute_rollout_correction_and_rejection_mask

ROLLOUT = torch.tensor([[-1.0, -2.0, -0.5], [-1.0, -2.0, -0.5]])
OLD = ROLLOUT + torch.tensor([[0.0], [0.2]])
MASK = torch.ones(2, 3)


def _apply(config):
    weights, mask, _ = compute_rollout_correction_and_rejection_mask(
        OLD, ROLLOUT, MASK, rollout_is=config.rollout_is, rollout_is_threshold=config.rollout_is_threshold,
        rollout_is_batch_normalize=config.rollout_is_batch_normalize, rollout_rs=config.rollout_rs,
        rollout_rs_threshold=config.rollout_rs_threshold)
    return (None if weights is None else weights.batch["rollout_is_weights"]), mask


@pytest.mark.parametrize("preset, fields", [
    (RC.decoupled_token_is(), ("token", 2.0, None, None, False, "ppo_clip")),
    (RC.decoupled_seq_is(3.0), ("sequence", 3.0, None, None, False, "ppo_clip")),
    (RC.decoupled_token_icepop(), ("token", "0.5_5.0", None, None, False, "ppo_clip")),
    (RC.decoupled_seq_is_rs(), ("sequence", 2.0, "seq_sum_k1", "0.5_2.0", False, "ppo_clip")),
    (RC.decoupled_geo_rs(), (None, 2.0, "seq_mean_k1", "0.999_1.001", False, "ppo_clip")),
    (RC.decoupled_geo_rs_seq_tis(rs_threshold=1.001), ("sequence", 2.0, "seq_mean_k1", 1.001, False, "ppo_clip")),
    (RC.decoupled_geo_rs_token_tis(), ("token", 2.0, "seq_mean_k1", "0.999_1.001", False, "ppo_clip")),
    (RC.decoupled_k3_rs(), (None, 2.0, "seq_mean_k3", 0.01, False, "ppo_clip")),
    (RC.decoupled_k3_rs_seq_tis(), ("sequence", 2.0, "seq_mean_k3", 0.01, False, "ppo_clip")),
    (RC.decoupled_k3_rs_token_tis(), ("token", 2.0, "seq_mean_k3", 0.01, False, "ppo_clip")),
    (RC.bypass_ppo_clip(), (None, 2.0, None, None, True, "ppo_clip")),
    (RC.bypass_ppo_clip_geo_rs(), (None, 2.0, "seq_mean_k1", "0.999_1.001", True, "ppo_clip")),
    (RC.bypass_ppo_clip_k3_rs(), (None, 2.0, "seq_mean_k3", 0.01, True, "ppo_clip")),
    (RC.bypass_pg_is(), ("sequence", 2.0, None, None, True, "reinforce")),
    (RC.bypass_pg_token_icepop(4.0, 0.25), ("token", "0.25_4.0", None, None, True, "reinforce")),
    (RC.bypass_pg_geo_rs(), (None, 2.0, "seq_mean_k1", "0.999_1.001", True, "reinforce")),
    (RC.bypass_pg_geo_rs_seq_tis(), ("sequence", 2.0, "seq_mean_k1", "0.999_1.001", True, "reinforce")),
    (RC.bypass_pg_geo_rs_token_tis(), ("token", 2.0, "seq_mean_k1", "0.999_1.001", True, "reinforce")),
    (RC.disabled(), (None, 2.0, None, None, False, "ppo_clip")),
])
def test_preset_fields(preset, fields):
    assert isinstance(preset, RC)
    assert (preset.rollout_is, preset.rollout_is_threshold, preset.rollout_rs, preset.rollout_rs_threshold,
            preset.bypass_mode, preset.loss_type) == fields
    assert preset.rollout_is_batch_normalize is False


def test_sequence_tis_truncates_at_the_threshold():
    weights, mask = _apply(RC.decoupled_seq_is())
    assert torch.equal(mask, MASK)
    assert weights[0].tolist() == pytest.approx([1.0] * 3)
    assert weights[1].tolist() == pytest.approx([math.exp(0.6)] * 3, rel=1e-5)
    weights, _ = _apply(RC.decoupled_seq_is(threshold=1.5))
    assert weights[1].tolist() == pytest.approx([1.5] * 3)


def test_geo_rs_rejects_the_drifted_sequence_and_keeps_the_other():
    weights, mask = _apply(RC.decoupled_geo_rs_seq_tis())
    assert mask.tolist() == [[1, 1, 1], [0, 0, 0]]
    assert weights[0].tolist() == pytest.approx([1.0] * 3)
    _, loose = _apply(RC.decoupled_geo_rs(rs_threshold="0.8_1.25"))  # exp(0.2) = 1.221 is inside
    assert torch.equal(loose, MASK)


def test_k3_rs_rejects_above_its_bound():
    _, mask = _apply(RC.decoupled_k3_rs())  # 0.0214 > 0.01
    assert mask.tolist() == [[1, 1, 1], [0, 0, 0]]
    _, mask = _apply(RC.decoupled_k3_rs(rs_threshold=0.05))
    assert torch.equal(mask, MASK)
    weights, _ = _apply(RC.disabled())
    assert weights is None
