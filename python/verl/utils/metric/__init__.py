"""verl's metric helpers (``verl.utils.metric``): ``reduce_metrics`` over lists of per-micro-batch values and the
``Metric`` accumulator with an explicit aggregation."""

from .utils import AggregationType, Metric, reduce_metrics

__all__ = ["reduce_metrics", "AggregationType", "Metric"]
