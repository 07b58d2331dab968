"""verl-cpp's core_algos vs. verl 0.9.1's own Python core_algos: time, peak memory and parity.

Measures, on the same random float32 inputs (generated once with a fixed seed, saved to .pt files
that both sides load):

- compute_gae_advantage_return, compute_grpo_outcome_advantage, compute_rloo_outcome_advantage
  (batch 1024 x response length 1024, groups of 8 responses, `index` a numpy object array of uid
  strings as verl's trainer passes it);
- compute_policy_loss_vanilla forward + backward (token-mean, an actor config with dual clip);
- logprobs_from_logits forward (no grad) and forward + backward, vocab 151936 (Qwen2's), on a
  smaller batch x sequence (default 4 x 512 tokens: 1.2 GB of float32 logits).

verl-cpp runs under verl-cpp's venv (this interpreter by default); the reference, verl 0.9.1 from
PyPI, under the venv made by setup_reference_venv.sh. Both packages are called `verl`, so each side
runs in its own process (core_algos_worker.py), with the same torch and torch.set_num_threads.

One fresh process per side and function. Time: warm-up calls, then the median of >= 5 timed calls.
Peak memory: then, in the same process, the peak increase of anonymous resident memory (RssAnon,
sampled by a second process) during one call, with the heap trimmed and glibc's mmap threshold
fixed so that it follows the live tensors (VmHWM's rise, which also counts file-backed pages, goes
into the JSON reports too). For logprobs_from_logits the verl-cpp process also times
and measures a plain log_softmax(logits).gather(labels) on the same tensors.
Parity: max |verl-cpp - verl| for every output, the loss's gradient and the metrics.

Prints a table, the parity results and MET / NOT MET for each target; --results-md also writes them
to a Markdown file. A benchmark, not a test: nothing here fails on a missed target.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import uuid

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "core_algos_worker.py")
sys.path.insert(0, os.path.dirname(HERE))
import results_json  # noqa: E402  (benchmarks/results_json.py)
from bench_env import load_average, machine  # noqa: E402

DEFAULT_REF_PYTHON = os.path.expanduser("~/.cache/verl-cpp/verl-ref-venv/bin/python")

PARITY_TOLERANCE = 1e-5
SPEEDUP_TARGET_PYTHON_LOOPS = 10.0  # GAE and GRPO: verl loops in Python over time steps / rows
SPEEDUP_TARGET_TENSOR_BOUND = 1.0  # tensor-bound losses and log-probs: never slower
LOGPROBS_MEMORY_TARGET = 0.5  # peak extra memory vs. plain log_softmax + gather

# name in the table, worker case, speedup target (None: reported only)
CASES = [
    ("compute_gae_advantage_return", "gae", SPEEDUP_TARGET_PYTHON_LOOPS),
    ("compute_grpo_outcome_advantage", "grpo", SPEEDUP_TARGET_PYTHON_LOOPS),
    ("compute_rloo_outcome_advantage", "rloo", None),
    ("compute_policy_loss_vanilla fwd+bwd", "policy_loss_fwd_bwd", SPEEDUP_TARGET_TENSOR_BOUND),
    ("logprobs_from_logits fwd", "logprobs_fwd", SPEEDUP_TARGET_TENSOR_BOUND),
    ("logprobs_from_logits fwd+bwd", "logprobs_fwd_bwd", SPEEDUP_TARGET_TENSOR_BOUND),
]
LOGPROBS_CASES = ("logprobs_fwd", "logprobs_fwd_bwd")


# ---- inputs ----------------------------------------------------------------------------------------
def make_inputs(out_dir: str, args: argparse.Namespace) -> dict:
    """Writes the inputs both sides load; returns a description of the sizes."""
    gen = torch.Generator().manual_seed(args.seed)
    bs, length, group = args.batch, args.response_length, args.group_size
    if bs % group:
        raise SystemExit(f"--batch {bs} is not a multiple of --group-size {group}")

    # uid per prompt, each prompt's `group` responses side by side (DataProto.repeat(interleave=True)).
    rng = random.Random(args.seed)
    prompt_uids = [str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(bs // group)]
    uids = [uid for uid in prompt_uids for _ in range(group)]

    # Responses end (EOS) anywhere between 1/16 of the length and the full length.
    lengths = torch.randint(length // 16, length + 1, (bs,), generator=gen)
    response_mask = (torch.arange(length).unsqueeze(0) < lengths.unsqueeze(1)).long()  # int64, as verl's
    last = (lengths - 1).unsqueeze(1)
    scores = torch.bernoulli(torch.full((bs, 1), 0.5), generator=gen)  # 0/1 outcome rewards
    outcome_rewards = torch.zeros(bs, length).scatter_(1, last, scores)
    # PPO-style token rewards: the outcome score at the last token plus a small per-token KL penalty.
    gae_rewards = outcome_rewards - 0.01 * torch.randn(bs, length, generator=gen).abs() * response_mask
    values = 0.5 * torch.randn(bs, length, generator=gen)
    torch.save(
        {"uids": uids, "response_mask": response_mask, "outcome_token_level_rewards": outcome_rewards,
         "gae_token_level_rewards": gae_rewards, "values": values},
        os.path.join(out_dir, "advantage_inputs.pt"),
    )

    old_log_prob = -torch.empty(bs, length).exponential_(1.0, generator=gen)
    log_prob = old_log_prob + 0.1 * torch.randn(bs, length, generator=gen)  # ratios around 1, some clipped
    advantages = torch.randn(bs, 1, generator=gen) * response_mask
    torch.save(
        {"old_log_prob": old_log_prob, "log_prob": log_prob, "advantages": advantages, "response_mask": response_mask},
        os.path.join(out_dir, "policy_loss_inputs.pt"),
    )

    tokens = (args.logits_batch, args.logits_seq)
    logits = 2.0 * torch.randn(*tokens, args.vocab, generator=gen)
    labels = torch.randint(0, args.vocab, tokens, generator=gen)
    grad_output = torch.randn(*tokens, generator=gen)
    torch.save({"logits": logits, "labels": labels, "grad_output": grad_output},
               os.path.join(out_dir, "logits_inputs.pt"))
    return {
        "advantages / policy loss": f"batch {bs} x response length {length} float32, groups of {group} "
                                    f"({bs // group} uid strings), response mask int64",
        "logprobs_from_logits": f"{tokens[0]} x {tokens[1]} tokens x vocab {args.vocab} float32 logits "
                                f"({logits.numel() * 4 / 2**30:.2f} GiB)",
    }


# ---- running the workers ---------------------------------------------------------------------------
def run_worker(python: str, side: str, case: str, inputs_dir: str, args: argparse.Namespace, save_outputs: str) -> dict:
    """Times and measures one function on one side in a fresh process; returns its report."""
    report_path = os.path.join(inputs_dir, f"report_{side}_{case}.json")
    cmd = [python, WORKER, "--side", side, "--case", case, "--inputs", inputs_dir, "--threads", str(args.threads),
           "--warmup", str(args.warmup), "--repeats", str(args.repeats), "--report", report_path,
           "--save-outputs", save_outputs]
    if side == "ours" and case in LOGPROBS_CASES:
        cmd.append("--plain-baseline")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # each venv imports its own `verl`
    if side == "ours" and args.ours_pythonpath:
        env["PYTHONPATH"] = os.path.abspath(args.ours_pythonpath)  # e.g. a build tree's python/; never the reference's
    env.update(OMP_NUM_THREADS=str(args.threads), MKL_NUM_THREADS=str(args.threads))
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"worker failed ({side}, {case}):\n{' '.join(cmd)}\n{proc.stdout}{proc.stderr}")
    with open(report_path) as f:
        return json.load(f)


def max_abs_diffs(ours_path: str, verl_path: str) -> dict[str, float]:
    ours = torch.load(ours_path, weights_only=True)
    ref = torch.load(verl_path, weights_only=True)
    if ours.keys() != ref.keys():
        raise SystemExit(f"outputs differ in names: {sorted(ours)} vs {sorted(ref)}")
    diffs = {}
    for name in ours:
        a, b = ours[name], ref[name]
        if a.shape != b.shape:
            raise SystemExit(f"{name}: shape {tuple(a.shape)} (verl-cpp) vs {tuple(b.shape)} (verl)")
        diffs[name] = (a.double() - b.double()).abs().max().item() if a.numel() else 0.0
    return diffs


# ---- report ----------------------------------------------------------------------------------------
def fmt_time(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds < 10 else f"{seconds:.2f} s"


def fmt_mib(n_bytes: int) -> str:
    return f"{n_bytes / 2**20:.1f} MiB"


def met(ok: bool) -> str:
    return "MET" if ok else "NOT MET"


def memory_ratio(ours: int, other: int) -> float | None:
    """ours / other, None where `other` did not rise measurably (tiny inputs)."""
    return ours / other if other > 0 else None


def fmt_ratio(ratio: float | None) -> str:
    return "n/a" if ratio is None else f"{ratio:.3f}"


def machine_lines() -> list[str]:
    m = machine()
    return [f"machine: {m['cores']} cores ({m['cpu']}), {m['ram_gib']} GiB RAM, CPU only, {m['os']}"]


def build_report(results: dict, parity: dict, sizes: dict, args: argparse.Namespace, load_before, load_after) -> str:
    ours_any = next(iter(results.values()))["ours"]
    ref_any = next(iter(results.values()))["verl"]
    lines = [f"date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}"]
    lines += machine_lines()
    lines.append(f"load average (1/5/15 min): {load_before} at start, {load_after} at end"
                 " -- the cores are shared with whatever else runs on the machine")
    lines.append(f"verl-cpp: {ours_any['package']} ({ours_any['package_file']})")
    lines.append(f"reference: {ref_any['package']} ({ref_any['package_file']})")
    lines.append(f"torch {ours_any['torch']} on both sides, torch.set_num_threads({args.threads}) on both sides")
    lines.append(f"timing: {args.warmup} warm-up calls, then median of {args.repeats}; one process per side and function")
    lines.append("peak extra: rise of the process's anonymous resident memory (RssAnon, sampled by a second process)"
                 " during one call, after a warm-up call")
    for what, size in sizes.items():
        lines.append(f"sizes, {what}: {size}")
    lines.append("")

    header = f"{'function':<38} {'verl-cpp':>10} {'verl':>10} {'speedup':>8}  {'peak extra verl-cpp / verl':>28} {'ratio':>6}"
    lines += [header, "-" * len(header)]
    for name, case, _ in CASES:
        if case not in results:
            continue
        r = results[case]
        ours_t, ref_t = r["ours"]["median_s"], r["verl"]["median_s"]
        ours_m, ref_m = r["ours"]["peak_extra_bytes"], r["verl"]["peak_extra_bytes"]
        mem = f"{fmt_mib(ours_m)} / {fmt_mib(ref_m)}"
        ratio = fmt_ratio(memory_ratio(ours_m, ref_m))
        lines.append(f"{name:<38} {fmt_time(ours_t):>10} {fmt_time(ref_t):>10} {ref_t / ours_t:>7.2f}x  {mem:>28} {ratio:>6}")
    lines.append("speedup = verl time / verl-cpp time (medians); ratio = verl-cpp peak extra / verl peak extra")
    lines += ["", f"timing spread, min .. max of the {args.repeats} timed calls:"]
    for name, case, _ in CASES:
        if case in results:
            ours, ref = results[case]["ours"]["times_s"], results[case]["verl"]["times_s"]
            lines.append(f"  {name:<38} verl-cpp {fmt_time(min(ours))} .. {fmt_time(max(ours))}"
                         f"   verl {fmt_time(min(ref))} .. {fmt_time(max(ref))}")

    plain_rows = [(name, case) for name, case, _ in CASES if case in results and case in LOGPROBS_CASES]
    if plain_rows:
        lines += ["", "logprobs_from_logits vs. plain log_softmax(logits).gather(labels), in verl-cpp's process:"]
        for name, case in plain_rows:
            r = results[case]
            ours_m, plain_m = r["ours"]["peak_extra_bytes"], r["ours"]["plain_peak_extra_bytes"]
            lines.append(f"  {name:<36} peak extra {fmt_mib(ours_m)} vs plain {fmt_mib(plain_m)} "
                         f"(ratio {fmt_ratio(memory_ratio(ours_m, plain_m))}); time {fmt_time(r['ours']['median_s'])} "
                         f"vs plain {fmt_time(r['ours']['plain_median_s'])}")

    lines += ["", f"parity: max |verl-cpp - verl| on the same float32 inputs (tolerance {PARITY_TOLERANCE:g})"]
    for name, case, _ in CASES:
        for output, diff in parity.get(case, {}).items():
            lines.append(f"  {name:<38} {output:<32} {diff:.3e}  {'ok' if diff <= PARITY_TOLERANCE else 'EXCEEDS'}")

    targets = []
    for name, case, target in CASES:
        if case not in results or target is None:
            continue
        speedup = results[case]["verl"]["median_s"] / results[case]["ours"]["median_s"]
        wording = f">= {target:g}x" if target > 1 else "never slower (>= 1x)"
        targets.append(results_json.target(f"{name} speedup vs verl 0.9.1", speedup, wording, speedup >= target))
    for name, case in plain_rows:
        r = results[case]["ours"]
        ratio = memory_ratio(r["peak_extra_bytes"], r["plain_peak_extra_bytes"])
        targets.append(results_json.target(f"{name} peak extra / plain log_softmax+gather", ratio or 0.0, "<= 0.5",
                                           None if ratio is None else ratio <= LOGPROBS_MEMORY_TARGET, unit=""))
    worst = max((d for diffs in parity.values() for d in diffs.values()), default=0.0)
    targets.append(results_json.target("core_algos parity, worst max |verl-cpp - verl|", worst,
                                       f"<= {PARITY_TOLERANCE:g}", worst <= PARITY_TOLERANCE, unit=""))
    lines += ["", "targets:"]
    for t in targets:
        lines.append(f"  {t['name']} {t['wanted']}: {results_json.format_value(t)}  "
                     f"{'n/a' if t['met'] is None else met(t['met'])}")
    return "\n".join(lines), targets


def write_results_md(path: str, report: str, args: argparse.Namespace) -> None:
    text = [
        "# core_algos: verl-cpp vs. verl 0.9.1",
        "",
        "Written by `make bench-core-algos` (benchmarks/core_algos/bench_core_algos.py); see",
        "benchmarks/README.md. Numbers are from one run on the machine named below; on a machine whose",
        "cores are shared with other jobs the timings move by tens of percent between runs.",
        "",
        "Command: `" + " ".join([os.path.basename(sys.executable)] + sys.argv) + "`",
        "",
        "```",
        report,
        "```",
        "",
    ]
    if args.note:
        text[6:6] = [f"Note: {args.note}", ""]
    with open(path, "w") as f:
        f.write("\n".join(text))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref-python", default=DEFAULT_REF_PYTHON, help="python of the verl 0.9.1 reference venv")
    parser.add_argument("--ours-python", default=sys.executable, help="python of verl-cpp's venv")
    parser.add_argument("--ours-pythonpath", help="PYTHONPATH for verl-cpp's worker only (e.g. python/ of a build "
                        "tree with the _C link); the reference worker never gets one")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="torch threads, both sides")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--response-length", type=int, default=1024)
    parser.add_argument("--group-size", type=int, default=8)
    parser.add_argument("--vocab", type=int, default=151936)
    parser.add_argument("--logits-batch", type=int, default=4)
    parser.add_argument("--logits-seq", type=int, default=512)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", nargs="+", choices=[case for _, case, _ in CASES], help="run only these cases")
    parser.add_argument("--results-md", help="also write the report to this Markdown file")
    parser.add_argument("--note", help="a line to put into the Markdown file")
    parser.add_argument("--results-json", help="also write the report and targets as JSON (benchmarks/results_json.py)")
    args = parser.parse_args()
    if args.repeats < 5:
        parser.error("--repeats must be at least 5")
    if not os.path.exists(args.ref_python):
        raise SystemExit(f"no reference venv at {args.ref_python}: run benchmarks/core_algos/setup_reference_venv.sh")

    load_before = load_average()
    work_dir = tempfile.mkdtemp(prefix="bench_core_algos_")
    try:
        print(f"generating inputs (seed {args.seed}) in {work_dir} ...", flush=True)
        sizes = make_inputs(work_dir, args)
        results, parity = {}, {}
        for name, case, _ in CASES:
            if args.only and case not in args.only:
                continue
            print(f"{name}: ", end="", flush=True)
            r, outputs = {}, {}
            for side, python in (("ours", args.ours_python), ("verl", args.ref_python)):
                outputs[side] = os.path.join(work_dir, f"outputs_{side}_{case}.pt")
                r[side] = run_worker(python, side, case, work_dir, args, save_outputs=outputs[side])
                print(f"{side} {fmt_time(r[side]['median_s'])}  ", end="", flush=True)
            if not r["ours"]["package"].startswith("verl-cpp") or r["verl"]["package"] != "verl 0.9.1":
                raise SystemExit(f"wrong packages: {r['ours']['package']} / {r['verl']['package']}")
            parity[case] = max_abs_diffs(outputs["ours"], outputs["verl"])
            for path in outputs.values():
                os.remove(path)
            results[case] = r
            print(flush=True)
        load_after = load_average()
        report, targets = build_report(results, parity, sizes, args, load_before, load_after)
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)

    print()
    print(report)
    if args.results_md:
        write_results_md(args.results_md, report, args)
        print(f"\nwritten to {args.results_md}")
    if args.results_json:
        results_json.write(args.results_json, title="core_algos: verl-cpp vs. verl 0.9.1", report=report,
                           targets=targets, data={"results": results, "parity": parity, "sizes": sizes})


if __name__ == "__main__":
    main()
