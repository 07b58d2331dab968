"""OpenMP's threads spin briefly in verl's processes (issue 40 item 5): libgomp reads its wait policy once, when torch
loads it, and its default spin (300,000 iterations) made every parallel region wait for a descheduled thread beside
any other busy process (a rollout 13-24x slower on 2 cores). `import verl` sets GOMP_SPINCOUNT=3000 before it imports
torch unless the caller chose a policy; libgomp's own report (OMP_DISPLAY_ENV=verbose) shows the spin count it took. The throughput beside a busy process is
measured in benchmarks/contention/bench_busy_neighbour.py, not here."""

import os
import subprocess
import sys


def libgomp_report(code: str, **env: str) -> tuple[str, str]:
    """The spin count libgomp took (its GOMP_SPINCOUNT line) and what the script printed, in a fresh process."""
    base = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    proc = subprocess.run([sys.executable, "-c", code + "\ntorch.ones(64).sum()"], capture_output=True, text=True,
                          env=dict(base, OMP_DISPLAY_ENV="verbose", **env), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    spin = [line.strip() for line in proc.stderr.splitlines() if line.strip().startswith("GOMP_SPINCOUNT")]
    return (spin[0] if spin else ""), proc.stdout.strip()


def test_import_verl_first_spins_briefly():
    spin, printed = libgomp_report("import os, verl, torch\nprint(os.environ['GOMP_SPINCOUNT'])")
    assert spin == "GOMP_SPINCOUNT = '3000'"
    assert printed == "3000"  # and every process this one starts inherits it


def test_the_callers_choice_is_kept():
    spin, printed = libgomp_report("import os, verl, torch\nprint(os.environ.get('GOMP_SPINCOUNT'))",
                                   OMP_WAIT_POLICY="PASSIVE")
    assert spin == "GOMP_SPINCOUNT = '0'" and printed == "None"
    spin, _ = libgomp_report("import os, verl, torch", GOMP_SPINCOUNT="100")
    assert spin == "GOMP_SPINCOUNT = '100'"


def test_torch_first_keeps_libgomps_default_here_but_children_spin_briefly():
    # libgomp was loaded before verl could say anything: this process keeps the default (documented in README), and
    # the processes it starts (torchrun ranks, the local spawn, reward workers) take verl's spin count.
    spin, printed = libgomp_report("import os, torch, verl\nprint(os.environ['GOMP_SPINCOUNT'])")
    assert spin == "GOMP_SPINCOUNT = '300000'"
    assert printed == "3000"
