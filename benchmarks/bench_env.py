"""What every benchmark measures about where it runs: the machine, its load, package versions, the torch.mm
peak, and medians with min-max. Standard library at module level (the TRL venv imports it too); torch only
inside gemm_peak."""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import time
from collections.abc import Sequence


def gemm_peak(dtype_name: str, threads: int, n: int = 1024) -> float:
    """FLOP/s of an n x n x n torch.mm in `dtype_name` with `threads` threads: the best of 5 samples, each the
    mean of 4 calls, after 3 warm-ups. Leaves torch's thread count at `threads`."""
    import torch

    torch.set_num_threads(threads)
    dtype = getattr(torch, dtype_name)
    a, b = torch.randn(n, n).to(dtype), torch.randn(n, n).to(dtype)
    for _ in range(3):
        torch.mm(a, b)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(4):
            torch.mm(a, b)
        best = min(best, (time.perf_counter() - start) / 4)
    return 2 * n**3 / best


def summarize(values: Sequence[float]) -> dict[str, float]:
    """median, min, max, n of the measured values."""
    if not values:
        raise ValueError("summarize: no values")
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def machine() -> dict:
    """CPU model, cores, RAM, OS and Python of this machine."""
    cpu = platform.processor() or platform.machine()
    mem_gib = None
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
        with open("/proc/meminfo", encoding="utf-8") as f:
            mem_gib = round(next(int(line.split()[1]) for line in f if line.startswith("MemTotal")) / 2**20, 1)
    except (OSError, StopIteration):
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "ram_gib": mem_gib,
            "os": f"{platform.system()} {platform.release()}", "python": platform.python_version()}


def load_average() -> str:
    """The 1/5/15-minute load averages, as /proc/loadavg writes them."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def package_version(python: str, module: str) -> str:
    """`module.__version__` as seen by the interpreter `python` ("-" when it is not there)."""
    try:
        out = subprocess.run([python, "-c", f"import {module}; print({module}.__version__)"], capture_output=True,
                             text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return "-"
    return out.stdout.strip() if out.returncode == 0 else "-"
