"""The JSON file each benchmark writes with `--results-json`; `bench_all.py` reads them to build
benchmarks/RESULTS.md. Kept to plain data so that any venv's python can write it.

    {"title": str, "report": str,                      # report: the text the benchmark printed
     "targets": [{"name": str, "value": float, "unit": str, "wanted": str, "met": bool | null,
                  "detail": str}, ...],
     "data": {...}}                                    # the benchmark's own raw numbers
"""

from __future__ import annotations

import json
import os


def target(name: str, value: float, wanted: str, met: bool | None, unit: str = "x", detail: str = "") -> dict:
    """One target line: `value` (in `unit`) against `wanted` (e.g. ">= 10x"); met None = not judged."""
    return {"name": name, "value": float(value), "unit": unit, "wanted": wanted, "met": met, "detail": detail}


def format_value(t: dict) -> str:
    """A target's value as the reports print it: "12.34x" for ratios, 3 significant digits otherwise."""
    return f"{t['value']:.2f}x" if t["unit"] == "x" else f"{t['value']:.3g}{t['unit']}"


def write(path: str, *, title: str, report: str, targets: list[dict], data: dict | None = None) -> None:
    payload = {"title": title, "report": report, "targets": targets, "data": data or {}}
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(payload, f, indent=2, default=str)
    os.replace(tmp, path)
