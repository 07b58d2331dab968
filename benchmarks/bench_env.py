"""What every benchmark measures about where it runs: the machine, its load, package versions, the torch.mm
peak, how busy a GPU is, and medians with min-max. Standard library at module level (the TRL venv imports it
too); torch only inside the functions that need it."""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import time
from collections.abc import Sequence


def timed(fn, device: str = "cpu"):
    """(fn(), seconds), a GPU synchronised before and after so the seconds cover its queued work."""
    import torch

    cuda = torch.device(device).type == "cuda"
    if cuda:
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    result = fn()
    if cuda:
        torch.cuda.synchronize(device)
    return result, time.perf_counter() - start


def gemm_peak(dtype_name: str, threads: int, n: int = 1024, device: str = "cpu") -> float:
    """FLOP/s of an n x n x n torch.mm in `dtype_name` with `threads` threads on `device`: the best of 5
    samples, each the mean of 4 calls, after 3 warm-ups (a GPU is synchronised around each sample; pass an n
    that fills it, e.g. 8192). Leaves torch's thread count at `threads`."""
    import torch

    torch.set_num_threads(threads)
    dtype = getattr(torch, dtype_name)
    a, b = torch.randn(n, n).to(device, dtype), torch.randn(n, n).to(device, dtype)

    def four():
        for _ in range(4):
            torch.mm(a, b)

    for _ in range(3):
        torch.mm(a, b)
    best = min(timed(four, device)[1] / 4 for _ in range(5))
    return 2 * n**3 / best


_GEMM_LOOP = """
import sys, time, torch
torch.set_num_threads(1)
a, b = torch.randn(2048, 256), torch.randn(256, 1024)
for _ in range(5):
    a @ b
start, calls = time.perf_counter(), 0
while time.perf_counter() - start < float(sys.argv[1]):
    a @ b
    calls += 1
print(calls / (time.perf_counter() - start))
"""


def parallel_gemm_scaling(processes: int, seconds: float = 2.0) -> float:
    """How much more one-thread GEMM work `processes` concurrent processes get done than one process alone, right
    now: the machine's ceiling for a data-parallel job of that many one-thread ranks. On a VM it varies with
    what the host runs beside it (this machine's 2 vCPUs: 1.66x to 2.0x within one hour), so a benchmark that
    compares N ranks with one process measures it beside every round."""
    import sys

    def rates(n: int) -> list[float]:
        procs = [subprocess.Popen([sys.executable, "-c", _GEMM_LOOP, str(seconds)], stdout=subprocess.PIPE,
                                  text=True, env=dict(os.environ, OMP_NUM_THREADS="1")) for _ in range(n)]
        return [float(p.communicate()[0]) for p in procs]

    solo = rates(1)[0]
    return sum(rates(processes)) / solo


# CUDA runtime / driver calls that make the host wait for the GPU (the profiler's names for them).
_HOST_SYNC_CALLS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy",
                    "cuStreamSynchronize", "cuCtxSynchronize", "cuMemcpyDtoH_v2", "cuMemcpyHtoD_v2")
_LAUNCH_CALLS = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx", "cudaGraphLaunch")


def gpu_busy(fn, device: str = "cuda") -> dict:
    """Runs fn() once under torch.profiler and reports how busy the GPU was: wall_s (host, GPU synchronised at
    both ends), busy_s (the union of the intervals in which a kernel, copy or memset ran), busy_frac, the number
    of kernel launches (launches) and of calls that make the host wait for the GPU (host_syncs: stream/device/event
    synchronisations and blocking cudaMemcpy), and gpu_top: the 8 kernels with the most GPU time (name, ms, calls).
    """
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize(device)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize(device)
        wall = time.perf_counter() - start
    intervals, launches, syncs, per_kernel = [], 0, 0, {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            t0 = e.time_range.start
            intervals.append((t0, e.time_range.end))
            ms, calls = per_kernel.get(e.name, (0.0, 0))
            per_kernel[e.name] = (ms + (e.time_range.end - t0) / 1e3, calls + 1)
        elif e.name in _LAUNCH_CALLS:
            launches += 1
        elif e.name in _HOST_SYNC_CALLS:
            syncs += 1
    intervals.sort()
    busy_us, end = 0.0, float("-inf")
    for a, b in intervals:  # union of the GPU intervals, in microseconds
        if a > end:
            busy_us += b - a
            end = b
        elif b > end:
            busy_us += b - end
            end = b
    top = sorted(per_kernel.items(), key=lambda kv: -kv[1][0])[:8]
    return dict(wall_s=wall, busy_s=busy_us / 1e6, busy_frac=busy_us / 1e6 / wall, launches=launches,
                host_syncs=syncs, gpu_top=[(name[:80], round(ms, 2), calls) for name, (ms, calls) in top])


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
