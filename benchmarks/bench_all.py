"""`make bench`: every benchmark of benchmarks/ in one run, rolled up into benchmarks/RESULTS.md.

Runs each benchmark script as its own process (each pits verl-cpp against its named baseline in the
same run and writes `--results-json`, see results_json.py), then writes RESULTS.md: the machine, the
package versions, the GEMM peak measured here, the commands, one table of every target with its
value and MET / NOT MET, and each benchmark's own report (medians over >= 3 runs with min-max).
A benchmark that fails is reported as FAILED with the end of its log; the others still run, and the
exit status is 1.

The workloads are sized so that the whole run takes well under an hour on 2 cores; where that is
smaller than an issue's full workload, the workload is printed in the benchmark's section and the
full size is one flag away (see benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shlex
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import results_json  # noqa: E402
from bench_env import gemm_peak, load_average, machine, package_version  # noqa: E402


def benchmarks(args: argparse.Namespace) -> list[tuple[str, list[str]]]:
    """(name, command) in run order; run_one adds `--results-json <workdir>/<name>.json`."""
    py = sys.executable
    threads = ["--threads", str(args.threads)]
    return [
        ("core_algos", [py, f"{HERE}/core_algos/bench_core_algos.py", "--ref-python", args.ref_python,
                        "--results-md", f"{HERE}/core_algos/RESULTS.md", *threads]),
        ("model", [py, f"{HERE}/model/bench_model.py", "--results-md", f"{HERE}/model/RESULTS.md", *threads]),
        # Tiny: the workload (64 prompts x 8 x 256 new tokens). Small: 16 x 8 x 64 -- transformers
        # alone needs ~20 min for the full small workload here (`make bench-rollout` runs it).
        ("rollout_tiny", [py, f"{HERE}/rollout/bench_rollout.py", "--models", "tiny", "--runs", "3", *threads]),
        ("rollout_small", [py, f"{HERE}/rollout/bench_rollout.py", "--models", "small", "--prompts", "16",
                           "--max-tokens", "64", "--hf-batch", "16", "--runs", "3", *threads]),
        # The real SmolLM2-135M-Instruct (issue 43): 64 prompts x 8 x 128 new tokens, one process per side (~10 min)
        ("rollout_smollm2", [py, f"{HERE}/rollout/bench_rollout.py", "--models", "smollm2", "--max-tokens", "128",
                             "--runs", "1", *threads]),
        ("grpo_step", [py, f"{HERE}/grpo_step/bench_grpo_step.py", "--trl-python", args.trl_python,
                       "--results-md", f"{HERE}/grpo_step/RESULTS.md", *threads]),
        ("dpo", [py, f"{HERE}/dpo/bench_dpo.py", "--trl-python", args.trl_python,
                 "--results-md", f"{HERE}/dpo/RESULTS.md", *threads]),
        # GRPO with LoRA r=32 on the real SmolLM2-135M vs full fine-tuning and TRL + PEFT (2 x 8 x 128, ~10-15 min)
        ("lora_grpo", [py, f"{HERE}/lora/bench_lora_grpo.py", "--trl-python", args.trl_python,
                       "--results-md", f"{HERE}/lora/RESULTS.md", *threads]),
        ("dist", [py, f"{HERE}/dist/bench_dp.py", "--ranks", "2"]),  # one thread per process by design
        ("agent", [py, f"{HERE}/agent/bench_async_rollout.py", *threads]),
        ("one_step", [py, f"{HERE}/one_step/bench_one_step_off.py", *threads]),
        # rollout and a GRPO step beside one busy process, under three OpenMP wait policies (~5 min)
        ("contention", [py, f"{HERE}/contention/bench_busy_neighbour.py", "--runs", "2", *threads]),
    ]


def git_revision() -> str:
    def git(*argv: str) -> str:
        return subprocess.run(["git", "-C", REPO, *argv], capture_output=True, text=True).stdout.strip()

    rev = git("rev-parse", "--short", "HEAD") or "unknown"
    return rev + (" (with uncommitted changes)" if git("status", "--porcelain", "--untracked-files=no") else "")


def run_one(name: str, cmd: list[str], json_path: str, log_path: str) -> dict:
    """Runs one benchmark, streaming its output to the console and to its log."""
    if os.path.exists(json_path):
        os.remove(json_path)
    cmd = cmd + ["--results-json", json_path]
    print(f"\n=== {name}: {shlex.join(cmd)}", flush=True)
    start = time.perf_counter()
    with open(log_path, "w", encoding="utf-8") as log:
        env = dict(os.environ, PYTHONUNBUFFERED="1")  # stream the child's lines as they come
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO, env=env)
        for line in proc.stdout:
            sys.stdout.write(line)
            log.write(line)
        proc.wait()
    seconds = time.perf_counter() - start
    entry = {"name": name, "command": shlex.join(cmd), "seconds": seconds, "returncode": proc.returncode}
    if proc.returncode == 0 and os.path.exists(json_path):
        with open(json_path, encoding="utf-8") as f:
            entry["result"] = json.load(f)
    else:
        with open(log_path, encoding="utf-8") as f:
            entry["log_tail"] = "".join(f.readlines()[-40:])
    return entry


def status(met: bool | None) -> str:
    return "n/a" if met is None else ("MET" if met else "NOT MET")


# Sections measured outside `make bench` (another CPU, a lent GPU) sit below this line of RESULTS.md; a full run
# rewrites everything above it and keeps them.
KEPT_MARKER = "<!-- Measured outside `make bench`: bench_all.py keeps what follows. -->"


def kept_sections(path: str) -> str:
    """The part of an existing RESULTS.md from KEPT_MARKER on ('' when there is none)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return ""
    at = text.find(KEPT_MARKER)
    return text[at:] if at >= 0 else ""


def render(entries: list[dict], header: dict) -> str:
    m = header["machine"]
    lines = [
        "# verl-cpp benchmarks: results",
        "",
        "Written by `make bench` (benchmarks/bench_all.py) — do not edit by hand; see benchmarks/README.md.",
        "Every number down to the sections measured elsewhere (a GPU, another CPU: at the end, kept by each run)",
        "comes from one `make bench` run on the machine below, each benchmark timing verl-cpp and its baseline in",
        "the same run. Ratios are verl-cpp over the baseline (higher is better for speed).",
        "",
        "## Machine and versions",
        "",
        f"- date: {header['date']}, total run time {header['seconds'] / 60:.1f} min",
        f"- machine: {m['cores']} cores ({m['cpu']}), {m['ram_gib']} GiB RAM, CPU only, {m['os']}",
        f"- load average (1/5/15 min): {header['load_start']} at start, {header['load_end']} at end",
        f"- torch.mm {header['gemm_n']}^3 peak with {header['threads']} threads, measured in this run: "
        f"fp32 {header['peaks']['float32'] / 1e9:.1f} GFLOP/s, bf16 {header['peaks']['bfloat16'] / 1e9:.1f} GFLOP/s",
        f"- verl-cpp {header['versions']['verl-cpp']} at git {header['git']}; python {m['python']}",
        "- " + ", ".join(f"{k} {v}" for k, v in header["versions"].items() if k != "verl-cpp"),
        "",
        "Profiles that explain the gaps: benchmarks/model/PROFILE.md (forward), benchmarks/rollout/PROFILE.md",
        "(generation), benchmarks/grpo_step/RESULTS.md (phase split of a GRPO step).",
        "",
        "## Targets",
        "",
        "| benchmark | measure | value | target | result |",
        "|---|---|---:|---|---|",
    ]
    for e in entries:
        if "result" not in e:
            lines.append(f"| {e['name']} | benchmark failed (exit {e['returncode']}) | | | FAILED |")
            continue
        for t in e["result"]["targets"]:
            lines.append(f"| {e['name']} | {t['name']} | {results_json.format_value(t)} | {t['wanted']} | "
                         f"{status(t['met'])} |")
    for e in entries:
        title = e["result"]["title"] if "result" in e else f"{e['name']}: FAILED"
        lines += ["", f"## {title}", "",
                  f"Command ({e['seconds'] / 60:.1f} min): `{e['command']}`", "", "```"]
        lines.append(e["result"]["report"] if "result" in e else f"FAILED (exit {e['returncode']}):\n{e['log_tail']}")
        lines.append("```")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="torch threads for every benchmark")
    parser.add_argument("--ref-python", default=os.path.expanduser("~/.cache/verl-cpp/verl-ref-venv/bin/python"),
                        help="python of the verl 0.9.1 reference venv (core_algos)")
    parser.add_argument("--trl-python", default=os.path.expanduser("~/.cache/verl-cpp/trl-venv/bin/python"),
                        help="python of the TRL venv (grpo_step, dpo, lora_grpo; benchmarks/grpo_step/setup_trl_venv.sh)")
    parser.add_argument("--only", nargs="+", help="run only these benchmarks (names as in RESULTS.md)")
    parser.add_argument("--workdir", default=os.path.join(REPO, "build", "bench"), help="JSON and logs go here")
    parser.add_argument("--results-md", help="default: benchmarks/RESULTS.md for a full run, <workdir>/RESULTS.partial.md "
                        "with --only (a partial run never replaces the roll-up)")
    args = parser.parse_args()
    if args.results_md is None:
        args.results_md = os.path.join(args.workdir, "RESULTS.partial.md") if args.only else os.path.join(HERE, "RESULTS.md")

    os.makedirs(args.workdir, exist_ok=True)
    plan = benchmarks(args)
    if args.only:
        unknown = set(args.only) - {name for name, _ in plan}
        if unknown:
            parser.error(f"unknown benchmark(s) {sorted(unknown)}; known: {[name for name, _ in plan]}")
        plan = [(name, cmd) for name, cmd in plan if name in args.only]

    # The revision before any benchmark rewrites its RESULTS.md (which would read as uncommitted changes).
    start, load_start, revision = time.perf_counter(), load_average(), git_revision()
    gemm_n = 2048
    peaks = {d: gemm_peak(d, args.threads, gemm_n) for d in ("float32", "bfloat16")}
    print(f"torch.mm {gemm_n}^3 peak, {args.threads} threads: fp32 {peaks['float32'] / 1e9:.1f} GFLOP/s, "
          f"bf16 {peaks['bfloat16'] / 1e9:.1f} GFLOP/s", flush=True)
    entries = [run_one(name, cmd, os.path.join(args.workdir, f"{name}.json"), os.path.join(args.workdir, f"{name}.log"))
               for name, cmd in plan]

    versions = {"verl-cpp": package_version(sys.executable, "verl")}
    for module in ("torch", "transformers", "tokenizers"):
        versions[module] = package_version(sys.executable, module)
    versions["verl (reference)"] = package_version(args.ref_python, "verl")
    versions["trl"] = package_version(args.trl_python, "trl")
    header = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"), "machine": machine(),
              "load_start": load_start, "load_end": load_average(), "threads": args.threads, "gemm_n": gemm_n,
              "peaks": peaks, "git": revision, "versions": versions, "seconds": time.perf_counter() - start}
    text = render(entries, header)
    kept = kept_sections(args.results_md)
    if kept:
        text += "\n" + kept
    with open(args.results_md, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"\nwritten to {args.results_md} ({header['seconds'] / 60:.1f} min)")
    failed = [e["name"] for e in entries if "result" not in e]
    if failed:
        print(f"FAILED: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
