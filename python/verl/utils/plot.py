"""The end-of-run picture: reward, response length and held-out accuracy against the training step.

Reads the JSONL metrics file the trainer always writes (verl.utils.tracking) and draws one PNG with
a panel per curve. matplotlib is optional (``pip install verl-cpp[plot]``): without it
``plot_training_curves`` raises ImportError and the trainer says so instead of drawing.
"""

from __future__ import annotations

import os
from typing import Any

from verl.utils.tracking import read_metrics

# (panel title, metric keys tried in order; a key ending in "*" matches every key with that prefix
# and the "/acc/mean@" marker, i.e. each data source's held-out accuracy).
PANELS = (
    ("training reward (mean)", ("critic/score/mean", "critic/rewards/mean")),
    ("response length (mean tokens)", ("response_length/mean",)),
    ("held-out accuracy", ("val-core/*",)),
)


def _series(records: list[tuple[int, dict[str, Any]]], key: str) -> dict[str, tuple[list[int], list[float]]]:
    """{label: (steps, values)} for one panel key; wildcard keys give one series per matching metric."""
    out: dict[str, tuple[list[int], list[float]]] = {}
    for step, data in records:
        for name, value in data.items():
            matches = (name.startswith(key[:-1]) and "/acc/mean@" in name) if key.endswith("*") else name == key
            if matches and isinstance(value, (int, float)) and not isinstance(value, bool):
                steps, values = out.setdefault(name, ([], []))
                steps.append(step)
                values.append(float(value))
    return out


def plot_training_curves(metrics_path: str, png_path: str, title: str | None = None) -> str:
    """Draws the curves of ``metrics_path`` into ``png_path`` (written atomically); returns png_path."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    records = read_metrics(metrics_path)
    fig, axes = plt.subplots(1, len(PANELS), figsize=(5 * len(PANELS), 3.6), constrained_layout=True)
    for ax, (panel_title, keys) in zip(axes, PANELS):
        drawn = False
        for key in keys:
            for label, (steps, values) in _series(records, key).items():
                ax.plot(steps, values, marker="o" if len(steps) < 30 else None, markersize=3, label=label)
                drawn = True
            if drawn:
                break
        ax.set_title(panel_title)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
        if drawn:
            ax.legend(fontsize=7)
        else:
            ax.text(0.5, 0.5, "not logged", ha="center", va="center", transform=ax.transAxes, color="gray")
    if title:
        fig.suptitle(title)
    directory = os.path.dirname(os.path.abspath(png_path))
    os.makedirs(directory, exist_ok=True)
    tmp = png_path + ".tmp"
    fig.savefig(tmp, format="png", dpi=110)
    plt.close(fig)
    os.replace(tmp, png_path)
    return png_path
