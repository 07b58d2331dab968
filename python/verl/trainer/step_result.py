"""``StepResult``: what ``PPOTrainer.step`` / ``optimize`` return -- every metric of the step under verl's names,
read as the policy loss where a number is expected, as the tutorials print it.

>>> result = trainer.step(rows)
>>> print(f"loss {result:.4f}")               # actor/pg_loss
>>> result.metrics["critic/score/mean"]        # or result["critic/score/mean"]: it is the metrics dict
"""

from __future__ import annotations

import math

__all__ = ["StepResult", "LOSS_KEY"]

#: the metric a StepResult reads as a number
LOSS_KEY = "actor/pg_loss"


class StepResult(dict):
    """A step's metrics (``dict[str, float]``); ``float(result)`` and ``format(result, spec)`` give ``actor/pg_loss``
    (NaN for a step without an actor update, e.g. during ``trainer.critic_warmup``)."""

    @property
    def metrics(self) -> dict[str, float]:
        """The metrics as a plain dict."""
        return dict(self)

    @property
    def loss(self) -> float:
        return float(self.get(LOSS_KEY, math.nan))

    def __float__(self) -> float:
        return self.loss

    def __format__(self, spec: str) -> str:
        return format(self.loss, spec)

    def __str__(self) -> str:
        return str(self.loss)

    def __repr__(self) -> str:
        return f"StepResult({LOSS_KEY}={self.loss!r}, {len(self)} metrics)"
