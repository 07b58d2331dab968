"""verl.utils.metric (issue 16 item 6): reduce_metrics' key-name rule and the Metric accumulator."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from verl.utils.metric import AggregationType, Metric, reduce_metrics


def test_reduce_metrics_by_key_name_and_by_metric():
    metrics = {"loss": [1.0, 2.0, 6.0], "grad_max": [1.0, 7.0, 3.0], "len_min": [4, 2, 9], "empty": [],
               "summed": Metric("sum", [1.0, 2.5])}
    out = reduce_metrics(metrics)
    assert out is metrics  # in place, as verl
    assert out == {"loss": 3.0, "grad_max": 7.0, "len_min": 2.0, "empty": out["empty"], "summed": 3.5}
    assert math.isnan(out["empty"])


def test_metric_values_and_aggregations():
    m = Metric(aggregation="mean", value=[1, 2.0])
    m.append(torch.tensor(6.0))
    m.append(np.float32(3.0))
    assert m.values == [1, 2.0, 6.0, 3.0] and m.aggregate() == 3.0
    assert Metric(AggregationType.MAX, [3.0, 9.0, 1.0]).aggregate() == 9.0
    assert Metric("min", [3.0, 9.0, 1.0]).aggregate() == 1.0
    assert Metric("sum", [3.0, 9.0, 1.0]).aggregate() == 13.0
    with pytest.raises(ValueError, match="Unsupported aggregation type"):
        Metric("median")
    with pytest.raises(ValueError, match="Only scalar tensors"):
        m.append(torch.ones(2))
    with pytest.raises(ValueError, match="Unsupported value type"):
        m.append("1.0")


def test_metric_combining():
    a, b = Metric("sum", [1.0, 2.0]), Metric("sum", [3.0])
    a.append(b)
    assert a.values == [1.0, 2.0, 3.0]
    chained = Metric.chain([Metric("max", [1.0]), Metric("max", [5.0, 2.0])])
    assert chained.values == [1.0, 5.0, 2.0] and chained.aggregate() == 5.0
    with pytest.raises(ValueError, match="mismatch"):
        a.extend(Metric("mean", [1.0]))
    fresh = chained.init_list()
    assert fresh.aggregation is AggregationType.MAX and fresh.values == []
    metrics = Metric.from_dict({"loss": 0.5, "acc": 1.0}, aggregation="mean")
    assert metrics["loss"].values == [0.5] and metrics["acc"].aggregation is AggregationType.MEAN


def test_aggregate_dp_means_over_ranks_step_by_step():
    ranks = [Metric("sum", [1.0, 3.0]), Metric("sum", [3.0, 5.0])]
    assert Metric.aggregate_dp(ranks) == 6.0  # (1+3)/2 + (3+5)/2
    assert Metric.aggregate_dp([Metric("max", [1.0, 3.0]), Metric("max", [8.0, 2.0])]) == 8.0
    with pytest.raises(ValueError, match="same number of values"):
        Metric.aggregate_dp([Metric("sum", [1.0]), Metric("sum", [1.0, 2.0])])
