"""Throughput with a busy neighbour (issue 40 item 5): the rollout engine and a GRPO step, each alone on the machine
and beside one other CPU-bound process, under OpenMP's two wait policies.

LibTorch's intra-op pool (and MKL's GEMMs, on the same libgomp) makes each idle thread spin at the barrier that ends
every parallel region. With a process of its own per core that costs nothing; with one more runnable process than
cores, a thread spins for a thread that the OS has descheduled -- often on its own core -- and each of the thousands
of barriers in a forward waits for a scheduler time slice: the issue measured 478 -> 20-37 tokens/s on the real
SmolLM2-135M-Instruct beside one niced busy process (2 cores). With OMP_WAIT_POLICY=PASSIVE an idle thread sleeps at
once and gives its core back; GOMP_SPINCOUNT=3000 spins a few microseconds first, which keeps most of the default's
speed on a quiet machine. libgomp reads these once, when torch loads it, so `import verl` sets GOMP_SPINCOUNT=3000
before it imports torch (verl/__init__.py), unless the caller chose a policy or imported torch first.

Each (workload, policy, neighbour) runs in a fresh process, --runs times, interleaved; the report gives medians with
min-max, the slowdown beside the neighbour, and PASSIVE's cost on the quiet machine.

    python benchmarks/contention/bench_busy_neighbour.py             # rollout + GRPO step, 3 runs each
    python benchmarks/contention/bench_busy_neighbour.py --runs 1 --only rollout
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
sys.path.insert(0, BENCH)
import results_json  # noqa: E402
from bench_env import load_average, machine, summarize  # noqa: E402

# libgomp's default spins 300,000 times before it sleeps, PASSIVE not at all; verl sets 3,000 (python/verl/__init__.py).
POLICIES = {"spin (libgomp's default)": {}, "spin 3k (verl's)": {"GOMP_SPINCOUNT": "3000"},
            "passive": {"OMP_WAIT_POLICY": "PASSIVE"}}
TARGET_SLOWDOWN = 2.5  # issue 40: on 2 cores, one busy neighbour may cost at most this factor


def rollout_cmd(checkpoint: str, args) -> list[str]:
    return [sys.executable, os.path.join(BENCH, "rollout", "bench_rollout.py"), "--worker", "--side", "verl",
            "--model", args.model, "--checkpoint", checkpoint, "--prompts", str(args.prompts), "--n", "4",
            "--prompt-len", "32", "--max-tokens", str(args.max_tokens), "--threads", str(args.threads)]


def grpo_spec(checkpoint: str, args, work: str) -> str:
    sys.path.insert(0, os.path.join(BENCH, "grpo_step"))
    import grpo_common

    spec = dict(threads=args.threads, model=args.model, checkpoint=checkpoint, prompts_per_step=4, n=4,
                max_tokens=args.max_tokens, warmup=0, steps=1, lr=1e-6, seed=0, micro_batch=16,
                prompts=grpo_common.make_prompt_texts(4, 24, seed=1))
    path = os.path.join(work, "spec.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(spec, f)
    return path


def run_once(workload: str, cmd: list[str], env_extra: dict[str, str], work: str) -> float:
    """Seconds of the timed part (rollout: the generate call; GRPO: the step), from the worker's own report."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    env.update(env_extra)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    if proc.returncode != 0:
        sys.exit(f"{workload} worker failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    if workload == "rollout":
        return json.loads(proc.stdout.strip().splitlines()[-1])["seconds"]
    with open(os.path.join(work, "grpo.json"), encoding="utf-8") as f:
        return json.load(f)["steps"][0]["step_s"]


@contextlib.contextmanager
def neighbour(busy: bool, nice: int):
    """One CPU-bound process (a Python busy loop) beside the measured one, or nothing."""
    if not busy:
        yield
        return
    proc = subprocess.Popen([sys.executable, "-c", f"import os; os.nice({nice})\nwhile True: pass"])
    time.sleep(0.3)
    try:
        yield
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="+", choices=["rollout", "grpo"], default=["rollout", "grpo"])
    ap.add_argument("--model", default="small", help="bench_rollout's model shapes (random init)")
    ap.add_argument("--prompts", type=int, default=8, help="rollout: prompts (x 4 samples)")
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--nice", type=int, default=0, help="the neighbour's nice value (the issue's was niced)")
    ap.add_argument("--results-json", default=None)
    args = ap.parse_args()

    sys.path.insert(0, os.path.join(BENCH, "grpo_step"))
    import grpo_common

    print(f"machine: {machine()}; load average before: {load_average()}")
    with tempfile.TemporaryDirectory() as work:
        checkpoint = os.path.join(work, args.model)
        grpo_common.write_checkpoint(checkpoint, args.model)
        commands = {}
        if "rollout" in args.only:
            commands["rollout"] = rollout_cmd(checkpoint, args)
        if "grpo" in args.only:
            commands["grpo"] = [sys.executable, os.path.join(BENCH, "grpo_step", "grpo_sides.py"), "verl",
                                grpo_spec(checkpoint, args, work), os.path.join(work, "grpo.json")]
        seconds: dict[tuple[str, str, bool], list[float]] = {}
        for _ in range(args.runs):  # interleaved, so drift hits every variant alike
            for workload, cmd in commands.items():
                for policy, env in POLICIES.items():
                    for busy in (False, True):
                        with neighbour(busy, args.nice):
                            s = run_once(workload, cmd, env, work)
                        seconds.setdefault((workload, policy, busy), []).append(s)
                        print(f"  {workload:8s} {policy:26s} {'busy' if busy else 'quiet'}: {s:.3f} s", flush=True)

    lines = [f"\n{args.threads} threads, model '{args.model}' (random init, fp32); rollout: {args.prompts} prompts x 4 "
             f"x {args.max_tokens} new tokens, timed generate; GRPO: 4 prompts x 4 x {args.max_tokens} tokens, one "
             f"step. Neighbour: one Python busy loop at nice {args.nice}. Medians of {args.runs} (min-max), seconds.",
             "", "| workload | wait policy | quiet | beside a busy process | slowdown | target |", "|---|---|---:|---:|---:|---|"]
    targets = []
    for workload in commands:
        for policy in POLICIES:
            q = summarize(seconds[(workload, policy, False)])
            b = summarize(seconds[(workload, policy, True)])
            slowdown = b["median"] / q["median"]
            met = slowdown <= TARGET_SLOWDOWN
            lines.append(f"| {workload} | {policy} | {q['median']:.3f} ({q['min']:.3f}-{q['max']:.3f}) | "
                         f"{b['median']:.3f} ({b['min']:.3f}-{b['max']:.3f}) | **{slowdown:.2f}x** | "
                         f"<= {TARGET_SLOWDOWN}x: {'met' if met else 'not met'} |")
            targets.append(results_json.target(f"{workload} slowdown beside a busy process, {policy}", slowdown,
                                               f"<= {TARGET_SLOWDOWN}x", met))
        spin = summarize(seconds[(workload, "spin (libgomp's default)", False)])["median"]
        for policy in list(POLICIES)[1:]:
            other = summarize(seconds[(workload, policy, False)])["median"]
            lines.append(f"| {workload} | {policy} / default spin, quiet | | | {other / spin:.2f}x | |")
    report = "\n".join(lines)
    print(report)
    if args.results_json:
        results_json.write(args.results_json, title="Throughput beside a busy process", report=report,
                           targets=targets, data={f"{w}|{p}|{'busy' if b else 'quiet'}": v
                                                  for (w, p, b), v in seconds.items()})


if __name__ == "__main__":
    main()
