"""verl.trainer.ppo.metric_utils: validation metrics against hand-computed values, the C++ step metrics
through their Python wrappers."""

import numpy as np
import pytest
import torch

from verl import DataProto
from verl.trainer.ppo.metric_utils import (bootstrap_metric, calc_maj_val, compute_data_metrics,
                                           compute_throughout_metrics, process_validation_metrics,
                                           validation_metric_dict)


def test_validation_metric_dict_names_and_values():
    sources = ["a", "a", "a", "a", "b"]
    uids = ["u1", "u1", "u2", "u2", "u3"]
    infos = {"reward": [1.0, 0.0, 1.0, 1.0, 0.25], "acc": [1.0, 0.0, 1.0, 1.0, 0.0], "pred": ["x", "y", "z", "z", "w"]}
    m = validation_metric_dict(sources, uids, infos)
    assert m["val-core/a/acc/mean@2"] == pytest.approx(0.75)      # per prompt (0.5, 1.0), then averaged
    assert m["val-aux/a/acc/std@2"] == pytest.approx(0.25)        # per prompt std (0.5, 0.0)
    assert m["val-aux/a/reward/mean@2"] == pytest.approx(0.75)    # acc is the core variable when reported
    assert "val-core/a/acc/best@2/mean" in m and "val-core/a/acc/maj@2/mean" in m
    assert "val-aux/a/acc/worst@2/mean" in m
    assert m["val-core/b/acc/mean@1"] == 0.0                     # one sample: only mean@1
    assert not any(k.startswith("val-core/a/pred") or k.startswith("val-aux/a/pred") for k in m)  # strings skipped


def test_bootstrap_matches_numpy_draws():
    data = [0.0, 1.0, 3.0]
    [(best_mean, best_std)] = bootstrap_metric(data, 2, [np.max], n_bootstrap=50, seed=7)
    np.random.seed(7)
    idx = np.random.choice(3, size=(50, 2), replace=True)
    best = np.array(data)[idx].max(axis=1)
    assert best_mean == pytest.approx(best.mean()) and best_std == pytest.approx(best.std())
    assert calc_maj_val([{"p": "A", "v": 1}, {"p": "B", "v": 2}, {"p": "A", "v": 3}], "p", "v") == 1
    assert process_validation_metrics(["s"], ["u"], {"reward": [2.0]}) == {"s": {"reward": {"mean@1": 2.0}}}


def test_step_metrics_wrappers():
    attention = torch.tensor([[1, 1, 1, 0], [0, 1, 1, 1]])
    batch = DataProto.from_dict(tensors={
        "prompts": torch.zeros(2, 2, dtype=torch.long), "responses": torch.zeros(2, 2, dtype=torch.long),
        "attention_mask": attention, "response_mask": attention[:, 2:],
        "token_level_scores": torch.tensor([[1.0, 0.0], [0.0, 3.0]]), "token_level_rewards": torch.tensor([[1.0, 0.0], [0.0, 3.0]]),
        "advantages": torch.tensor([[0.5, 9.0], [-1.0, 1.0]]), "returns": torch.zeros(2, 2)})
    m = compute_data_metrics(batch, use_critic=False)
    assert m["critic/score/mean"] == pytest.approx(2.0)
    assert m["critic/advantages/min"] == pytest.approx(-1.0)
    assert m["critic/advantages/max"] == pytest.approx(1.0)       # 9.0 sits outside the response mask
    assert m["response_length/mean"] == pytest.approx(1.5)
    assert m["response_length/clip_ratio"] == pytest.approx(0.5)
    p = compute_throughout_metrics(batch, {"step": 2.0})
    assert p["perf/total_num_tokens"] == 6 and p["perf/throughput"] == pytest.approx(3.0)
