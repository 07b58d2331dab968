"""The JSON file each benchmark writes with `--results-json`; `bench_all.py` reads them to build
benchmarks/RESULTS.md. Kept to plain data so that any venv's python can write it.

    {"title": str, "command": str, "report": str,      # report: the text the benchmark printed
     "targets": [{"name": str, "value": float, "unit": str, "wanted": str, "met": bool | null,
                  "detail": str}, ...],
     "data": {...}}                                    # the benchmark's own raw numbers
"""

from __future__ import annotations

import json
import os
import sys


def target(name: str, value: float, wanted: str, met: bool | None, unit: str = "x", detail: str = "") -> dict:
    """One target line: `value` (in `unit`) against `wanted` (e.g. ">= 10x"); met None = not judged."""
    return {"name": name, "value": float(value), "unit": unit, "wanted": wanted, "met": met, "detail": detail}


def command_line() -> str:
    return " ".join([os.path.basename(sys.executable)] + sys.argv)


def write(path: str, *, title: str, report: str, targets: list[dict], data: dict | None = None) -> None:
    payload = {"title": title, "command": command_line(), "report": report, "targets": targets, "data": data or {}}
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(payload, f, indent=2, default=str)
    os.replace(tmp, path)
