"""``reduce_metrics`` and ``Metric`` (verl's ``verl.utils.metric.utils``).

A worker reports each metric as a list of values (one per micro-batch) or as a ``Metric`` that names how its values
combine; ``reduce_metrics`` turns either into one number: a ``Metric`` by its own aggregation, a list by verl's
key-name rule (``max`` in the name: the maximum, ``min``: the minimum, else the mean). An empty list gives NaN.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from enum import Enum
from typing import Any, Union

import numpy as np
import torch

__all__ = ["AggregationType", "Metric", "reduce_metrics"]

Numeric = Union[int, float, torch.Tensor, np.ndarray]


class AggregationType(Enum):
    """How a ``Metric``'s values combine into one number."""

    MEAN = "mean"
    SUM = "sum"
    MIN = "min"
    MAX = "max"


def _reduce(values: Any, aggregation: AggregationType) -> float:
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return math.nan
    reduce_fn = {AggregationType.MEAN: np.mean, AggregationType.SUM: np.sum, AggregationType.MIN: np.min,
                 AggregationType.MAX: np.max}[aggregation]
    return float(reduce_fn(values))


def reduce_metrics(metrics: dict[str, Union[Metric, list[Any]]]) -> dict[str, Any]:
    """Each entry reduced to one number, in place (as verl does) and returned: a ``Metric`` by its aggregation, a list
    by the maximum when the key contains ``max``, the minimum when it contains ``min``, else the mean."""
    for key, value in metrics.items():
        if isinstance(value, Metric):
            metrics[key] = value.aggregate()
        elif "max" in key:
            metrics[key] = _reduce(value, AggregationType.MAX)
        elif "min" in key:
            metrics[key] = _reduce(value, AggregationType.MIN)
        else:
            metrics[key] = _reduce(value, AggregationType.MEAN)
    return metrics


class Metric:
    """Values of one metric (numbers or scalar tensors, stored as Python numbers) and how they aggregate."""

    def __init__(self, aggregation: str | AggregationType, value: Numeric | list[Numeric] | None = None) -> None:
        if isinstance(aggregation, AggregationType):
            self.aggregation = aggregation
        else:
            try:
                self.aggregation = AggregationType(aggregation)
            except ValueError:
                choices = [a.value for a in AggregationType]
                raise ValueError(f"Unsupported aggregation type: {aggregation} (one of {choices})") from None
        self.values: list[Any] = []
        if isinstance(value, list):
            self.extend(value)
        elif value is not None:
            self.append(value)

    def append(self, value: Numeric | Metric) -> None:
        """Adds one value (a scalar tensor or 0-d array becomes a float), or every value of another ``Metric``."""
        if isinstance(value, Metric):
            self.extend(value)
            return
        if isinstance(value, (torch.Tensor, np.ndarray)):
            if (value.numel() if isinstance(value, torch.Tensor) else value.size) != 1:
                raise ValueError(f"Only scalar tensors can be converted to float, got shape {tuple(value.shape)}")
            value = float(value.item())
        elif not isinstance(value, (int, float, np.integer, np.floating)) or isinstance(value, bool):
            raise ValueError(f"Unsupported value type: {type(value)}")
        self.values.append(value)

    def extend(self, values: Metric | Iterable[Numeric]) -> None:
        """Adds several values; another ``Metric`` must aggregate the same way."""
        if isinstance(values, Metric):
            if values.aggregation != self.aggregation:
                raise ValueError(f"Aggregation type mismatch: {self.aggregation} != {values.aggregation}")
            values = list(values.values)
        for value in values:
            self.append(value)

    def aggregate(self) -> float:
        return _reduce(self.values, self.aggregation)

    @classmethod
    def aggregate_dp(cls, metric_lists: list[Metric]) -> float:
        """One number from the same metric on several data-parallel ranks (each with one value per gradient
        accumulation step): sum and mean average over ranks step by step first, min and max take all values."""
        if not metric_lists:
            raise ValueError("Cannot aggregate an empty list of metrics.")
        lengths = [len(m.values) for m in metric_lists]
        if len(set(lengths)) != 1:
            raise ValueError(f"All Metric instances must have the same number of values for dp aggregation: {lengths}")
        aggregation = metric_lists[0].aggregation
        values = np.array([m.values for m in metric_lists], dtype=np.float64)  # (num_dp, num_grad_accumulation)
        if aggregation in (AggregationType.SUM, AggregationType.MEAN):
            return _reduce(values.mean(axis=0), aggregation)
        return _reduce(values.reshape(-1), aggregation)

    @classmethod
    def chain(cls, metrics: list[Metric]) -> Metric:
        """One ``Metric`` holding every value of ``metrics`` in order (all must aggregate the same way)."""
        if not metrics:
            raise ValueError("Cannot chain an empty list of metrics.")
        out = cls(aggregation=metrics[0].aggregation)
        for metric in metrics:
            out.extend(metric)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Numeric], aggregation: str | AggregationType) -> dict[str, Metric]:
        return {key: cls(aggregation=aggregation, value=value) for key, value in data.items()}

    def init_list(self) -> Metric:
        """An empty ``Metric`` with the same aggregation."""
        return Metric(aggregation=self.aggregation)

    def __repr__(self) -> str:
        return f"Metric(aggregation={self.aggregation.value!r}, values={self.values!r})"
