"""verl.trainer.ppo.metric_utils: validation metrics against hand-computed values, the C++ step metrics
through their Python wrappers."""

import numpy as np
import pytest
import torch

from verl import DataProto
from verl.trainer.ppo.metric_utils import (bootstrap_metric, calc_maj_val, compute_data_metrics,
                                           compute_throughout_metrics, compute_timing_metrics,
                                           process_validation_metrics, validation_metric_dict)


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


def test_expected_acc_counts_count_missing_sessions_as_wrong():
    # math/u1: 3 of 4 sessions reported acc; u2: 2 rows, one failed (acc None); u3: 2 sessions, none reported.
    # chat reports only a reward: expected counts leave it alone.
    sources = ["math"] * 5 + ["chat"] * 2
    uids = ["u1", "u1", "u1", "u2", "u2", "c1", "c1"]
    infos = {"acc": [1.0, 0.0, 1.0, 1.0, None, None, None], "reward": [1.0, 0.0, 1.0, 0.5, 0.25, 0.75, 0.25]}
    expected = {("math", "u1"): 4, ("math", "u2"): 2, ("math", "u3"): 2, ("chat", "c1"): 4}
    m = process_validation_metrics(sources, uids, infos, expected_acc_counts=expected)
    acc = m["math"]["acc"]
    assert acc["mean@4"] == pytest.approx(0.5)       # u1: [1, 0, 1, 0]
    assert acc["std@4"] == pytest.approx(0.5)
    assert acc["mean@2"] == pytest.approx(0.25)      # u2: [1, 0] -> 0.5 and u3: [0, 0] -> 0.0, averaged
    success = m["math"]["acc_success_only"]
    assert success["mean@3"] == pytest.approx(2 / 3) and success["mean@1"] == pytest.approx(1.0)  # u3 has none
    assert "mean@4" not in success
    assert m["math"]["reward"]["mean@3"] == pytest.approx(2 / 3)  # other variables are as reported
    assert list(m["chat"]) == ["reward"] and m["chat"]["reward"]["mean@2"] == pytest.approx(0.5)
    # Without expected counts nothing is filled in; more sessions than expected are all kept.
    plain = process_validation_metrics(sources, uids, infos)
    assert plain["math"]["acc"]["mean@3"] == pytest.approx(2 / 3) and "acc_success_only" not in plain["math"]
    fewer = process_validation_metrics(sources, uids, infos, expected_acc_counts={("math", "u1"): 2})
    assert fewer["math"]["acc"]["mean@3"] == pytest.approx(2 / 3)
    # validation_metric_dict passes them on: the core metric is acc at the largest N.
    v = validation_metric_dict(sources, uids, infos, expected_acc_counts=expected)
    assert v["val-core/math/acc/mean@4"] == pytest.approx(0.5) and v["val-aux/math/acc/mean@2"] == pytest.approx(0.25)
    assert v["val-aux/math/acc_success_only/mean@3"] == pytest.approx(2 / 3)


def test_timing_metrics_per_token():
    attention = torch.tensor([[1, 1, 1, 0], [0, 1, 1, 1]])  # prompt tokens 2 + 1, response tokens 1 + 2
    batch = DataProto.from_dict(tensors={"responses": torch.zeros(2, 2, dtype=torch.long), "attention_mask": attention})
    m = compute_timing_metrics(batch, {"gen": 0.3, "ref": 0.6, "update_actor": 1.2, "step": 2.0})
    assert m == {"timing_s/gen": 0.3, "timing_s/ref": 0.6, "timing_s/update_actor": 1.2, "timing_s/step": 2.0,
                 "timing_per_token_ms/gen": pytest.approx(100.0),           # 300 ms / 3 response tokens
                 "timing_per_token_ms/ref": pytest.approx(100.0),           # 600 ms / 6 tokens
                 "timing_per_token_ms/update_actor": pytest.approx(200.0)}  # 1200 ms / 6 tokens
    # No valid token: 0.0 instead of a division by zero.
    empty = DataProto.from_dict(tensors={"responses": torch.zeros(2, 2, dtype=torch.long),
                                         "attention_mask": torch.zeros(2, 4, dtype=torch.long)})
    z = compute_timing_metrics(empty, {"gen": 0.5, "values": 0.2})
    assert z["timing_per_token_ms/gen"] == 0.0 and z["timing_per_token_ms/values"] == 0.0 and z["timing_s/gen"] == 0.5
    # A batch carrying prompt_length / response_length is counted from them (verl 0.9.1's _compute_response_info).
    lengths = DataProto.from_dict(tensors={"prompt_length": torch.tensor([4, 0]), "response_length": torch.tensor([2, 0])})
    c = compute_timing_metrics(lengths, {"gen": 0.3, "adv": 0.6})
    assert c["timing_per_token_ms/gen"] == pytest.approx(150.0) and c["timing_per_token_ms/adv"] == pytest.approx(100.0)
