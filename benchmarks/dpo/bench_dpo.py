"""DPO step: verl-cpp's ``verl.DPOTrainer`` (C++ step) vs TRL's ``trl.DPOTrainer``, on the CPU.

Same random-init Qwen2-architecture checkpoint (the rollout benchmark's ``tiny`` ~3.7M and ``small`` ~100M models,
written once as a Hugging Face checkpoint and read by both sides; each side's reference is the same checkpoint), the
same preference pairs in the same order (plain-text rows: random-letter prompts, a lowercase chosen and an uppercase
rejected completion of independent random lengths; TRL tokenizes the text, verl-cpp gets the ids TRL is checked to
train on), the same thread count and the same hyperparameters: loss ``sigmoid`` (DPO), beta, label smoothing 0, B
pairs per optimizer step in micro-batches of M pairs (TRL per_device_train_batch_size = M, gradient accumulation
B / M; verl-cpp data.micro_batch_size_per_gpu = M, no dynamic batching), fp32 weights and compute, AdamW at a
constant lr (betas 0.9 / 0.999, weight decay 0, grad clip 1), gradient checkpointing off, the reference's log-probs
computed on the fly each step (TRL precompute_ref_log_probs = False; verl-cpp: once per batch). Each side runs in its
own process (dpo_sides.py, which says how each step is timed).

Reported per model: step time (median, min-max over the measured steps after the warm-up), the TRL / verl-cpp
ratio (target >= 3x, issue 20), tokens per second (non-padding tokens of both sequences of every pair), MFU against
the fp32 ``torch.mm`` peak measured in the same run (the step's useful matmul FLOPs, dpo_common.forward_flops: the
policy's forward + backward and the reference's forward, the LM head on completion tokens only), peak RSS, and the loss curves of both sides step by step with their largest difference
(target: the same curve; from the same weights and data both compute the batch's mean DPO loss, TRL as the mean of
its equal micro-batches' means, so the curves agree up to float rounding -- step 1 is log 2 on both, policy = reference).

    python benchmarks/dpo/bench_dpo.py --trl-python ~/.cache/verl-cpp/trl-venv/bin/python \\
        --results-md benchmarks/dpo/RESULTS.md --results-json build/bench/dpo.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import dpo_common as common  # noqa: E402

sys.path.insert(0, os.path.dirname(HERE))
import results_json  # noqa: E402
from bench_env import gemm_peak, load_average, machine, package_version  # noqa: E402

SIDES = ("verl", "trl")
LABEL = {"verl": "verl-cpp", "trl": "TRL"}
SPEEDUP_TARGET = 3.0  # issue 20: the DPO step >= 3x TRL's
LOSS_TOLERANCE = 1e-3  # largest |loss difference| over the curve that still reads as "the same loss curve"
METRICS = ("grad_norm", "rewards/margins", "rewards/accuracies", "logps/chosen")


def run_side(side: str, spec: dict, python: str, workdir: str, tag: str) -> dict:
    spec_path = os.path.join(workdir, f"{tag}-{side}.spec.json")
    out_path = os.path.join(workdir, f"{tag}-{side}.out.json")
    with open(spec_path, "w", encoding="utf-8") as f:
        json.dump(spec, f)
    env = dict(os.environ, OMP_NUM_THREADS=str(spec["threads"]), TOKENIZERS_PARALLELISM="false",
               PYTHONWARNINGS="ignore")
    t0 = time.perf_counter()
    proc = subprocess.run([python, os.path.join(HERE, "dpo_sides.py"), side, spec_path, out_path], env=env,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{LABEL[side]} side of {tag} failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    with open(out_path, encoding="utf-8") as f:
        result = json.load(f)
    result["wall_s"] = time.perf_counter() - t0
    print(f"  {tag}: {LABEL[side]} done in {result['wall_s']:.0f} s", flush=True)
    return result


def workload(args, model: str) -> dict:
    if model == "small":
        return dict(pairs_per_step=args.small_pairs, micro_pairs=args.small_micro_pairs,
                    prompt_tokens=args.small_prompt_tokens, completion_tokens=list(args.small_completion_tokens),
                    warmup=args.warmup, steps=args.small_steps)
    return dict(pairs_per_step=args.pairs, micro_pairs=args.micro_pairs, prompt_tokens=args.prompt_tokens,
                completion_tokens=list(args.completion_tokens), warmup=args.warmup, steps=args.steps)


def make_spec(args, model: str, checkpoint: str) -> dict:
    import transformers

    w = workload(args, model)
    if w["pairs_per_step"] % w["micro_pairs"]:
        raise SystemExit(f"{model}: pairs per step ({w['pairs_per_step']}) must be a multiple of the micro-batch "
                         f"({w['micro_pairs']} pairs)")
    count = (w["warmup"] + w["steps"]) * w["pairs_per_step"]
    rows = common.make_pair_texts(count, w["prompt_tokens"], tuple(w["completion_tokens"]), seed=args.seed + 1)
    tokenizer = transformers.AutoTokenizer.from_pretrained(checkpoint)
    expected = [common.expected_pair_ids(tokenizer, row, tokenizer.eos_token) for row in rows]
    return dict(w, model=model, checkpoint=checkpoint, rows=rows, expected=expected, lr=args.lr, beta=args.beta,
                seed=args.seed, threads=args.threads, pad_id=common.special_ids(common.MODELS[model]["vocab_size"])["pad"])


def step_flops(model: str, spec: dict, k: int) -> float:
    """Step k's useful matmul FLOPs (dpo_common.forward_flops): the policy's forward + backward (3x a forward) and
    the reference's forward over every sequence of the step."""
    B = spec["pairs_per_step"]
    pairs = spec["expected"][k * B:(k + 1) * B]
    seqlens = [len(p["prompt_ids"]) + len(p[f"{side}_ids"]) for p in pairs for side in ("chosen", "rejected")]
    completions = [len(p[f"{side}_ids"]) for p in pairs for side in ("chosen", "rejected")]
    return 4 * common.forward_flops(model, seqlens, completions)


def summarize_side(runs: list[dict], spec: dict, peak: float) -> dict:
    """Medians (min-max) over the measured steps of every run of one side; the curves of the first run."""
    first = spec["warmup"]
    measured = [(first + i, s) for result in runs for i, s in enumerate(result["steps"][first:])]
    out = {"step": common.summarize([s["step_s"] for _, s in measured]),
           "tokens_per_s": common.summarize([s["tokens"] / s["step_s"] for _, s in measured]),
           "mfu_fp32": common.summarize([step_flops(spec["model"], spec, k) / s["step_s"] / peak for k, s in measured]),
           "peak_rss_mb": max(result["peak_rss_mb"] for result in runs), "tokens": measured[0][1]["tokens"],
           "padded_tokens": common.summarize([s["padded_tokens"] for _, s in measured])}
    out["curve"] = {key: [s.get(key, float("nan")) for s in runs[0]["steps"]] for key in ("loss",) + METRICS}
    out["step_times"] = [s["step_s"] for s in runs[0]["steps"]]
    out["runs"] = len(runs)
    return out


def bench_model(args, model: str, checkpoint: str, peak: float, workdir: str) -> dict:
    spec = make_spec(args, model, checkpoint)
    w = workload(args, model)
    lens = [len(p["prompt_ids"]) + len(p[f"{s}_ids"]) for p in spec["expected"] for s in ("chosen", "rejected")]
    completion = [len(p[f"{s}_ids"]) for p in spec["expected"] for s in ("chosen", "rejected")]
    row = {"model": model, "workload": dict(w, lr=args.lr, beta=args.beta, threads=args.threads,
                                            mean_seq_tokens=sum(lens) / len(lens), max_seq_tokens=max(lens),
                                            mean_completion_tokens=sum(completion) / len(completion))}
    print(f"{model}: {w['pairs_per_step']} pairs/step in micro-batches of {w['micro_pairs']}, sequences of "
          f"{row['workload']['mean_seq_tokens']:.0f} tokens on average, {w['warmup']} warm-up + {w['steps']} "
          "measured steps", flush=True)
    order = SIDES if not args.trl_first else tuple(reversed(SIDES))
    runs: dict[str, list[dict]] = {side: [] for side in SIDES}
    for _ in range(args.runs):  # alternating, so that a change in the machine's load hits both sides alike
        for side in order:
            runs[side].append(run_side(side, spec, args.python[side], workdir, model))
    for side in SIDES:
        row[side] = summarize_side(runs[side], spec, peak)
    row["speedup"] = row["trl"]["step"]["median"] / row["verl"]["step"]["median"]
    row["met"] = row["speedup"] >= SPEEDUP_TARGET
    row["max_diff"] = {key: max(abs(a - b) for a, b in zip(row["verl"]["curve"][key], row["trl"]["curve"][key]))
                       for key in ("loss",) + METRICS}
    row["loss_met"] = row["max_diff"]["loss"] <= LOSS_TOLERANCE
    return row


def _mmm(s: dict, fmt: str = "{:.3f}", scale: float = 1.0) -> str:
    return (f"{fmt.format(s['median'] * scale)} ({fmt.format(s['min'] * scale)}-{fmt.format(s['max'] * scale)})")


def report(results: dict) -> str:
    env = results["environment"]
    lines = [
        "# DPO step: verl-cpp DPOTrainer vs TRL DPOTrainer (CPU)",
        "",
        f"{env['date']}; {env['cpu']}; {env['threads']} threads on both sides; load average {env['loadavg_start']} at "
        f"start, {env['loadavg_end']} at end; torch {env['torch_version']}, transformers "
        f"{env['transformers_version']}, trl {env['trl_version']}; torch.mm fp32 peak "
        f"{results['peak_fp32'] / 1e9:.1f} GFLOP/s (this run). Whole run {results['seconds'] / 60:.1f} min.",
        "",
        "Both sides: sigmoid loss, label smoothing 0, fp32, AdamW (constant lr, betas 0.9/0.999, weight decay 0, grad",
        "clip 1), no gradient checkpointing, the reference's log-probs on the fly each step, the same checkpoint, pairs",
        "and order. Step time: median (min-max) of the measured steps after the warm-up (over every run:",
        f"{results['args'].get('runs', 1)} per side, alternating); ratio = TRL / verl-cpp.",
        "",
        "| model | pairs/step (micro) | tokens/seq (mean, max) | verl-cpp step s | TRL step s | speedup | verl-cpp tok/s "
        "| TRL tok/s | MFU fp32 verl-cpp / TRL (useful FLOPs) | peak RSS MB verl-cpp / TRL |",
        "|---|---|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for row in results["models"]:
        w, v, t = row["workload"], row["verl"], row["trl"]
        lines.append(
            f"| {row['model']} | {w['pairs_per_step']} ({w['micro_pairs']}) | {w['mean_seq_tokens']:.0f}, "
            f"{w['max_seq_tokens']} | {_mmm(v['step'])} | {_mmm(t['step'])} | **{row['speedup']:.2f}x** | "
            f"{v['tokens_per_s']['median']:.0f} | {t['tokens_per_s']['median']:.0f} | "
            f"{v['mfu_fp32']['median'] * 100:.1f}% / {t['mfu_fp32']['median'] * 100:.1f}% | "
            f"{v['peak_rss_mb']:.0f} / {t['peak_rss_mb']:.0f} |")
    lines += ["", f"Target: >= {SPEEDUP_TARGET:.0f}x on each model (issue 20). Padding: TRL pads each micro-batch to "
              "its longest sequence (padding_free is off in TRL 1.16 without FlashAttention), verl-cpp removes the "
              "padding before the forward; padded / real tokens per step: " + ", ".join(
                  f"{row['model']} {row['trl']['padded_tokens']['median'] / row['trl']['tokens']:.2f}"
                  for row in results["models"]) + " (TRL's micro-batches)."]
    # What the ratio can reach at all: verl-cpp's step doing only its useful matmuls at the measured peak.
    bounds = []
    for row in results["models"]:
        floor = row["verl"]["step"]["median"] * row["verl"]["mfu_fp32"]["median"]
        bounds.append(f"{row['model']} {floor:.2f} s, so at most {row['trl']['step']['median'] / floor:.1f}x")
    lines += ["", "Bound: verl-cpp's step at 100 % of the measured peak on its useful FLOPs alone would take "
              + "; ".join(bounds) + " against this run's TRL step."]
    for row in results["models"]:
        v, t = row["verl"]["curve"], row["trl"]["curve"]
        lines += ["", f"## Loss curve, {row['model']} (lr {row['workload']['lr']}, beta {row['workload']['beta']})",
                  "",
                  "| step | verl-cpp loss | TRL loss | |diff| | verl-cpp grad norm | TRL grad norm | verl-cpp margin | "
                  "TRL margin | verl-cpp step s | TRL step s |",
                  "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for k in range(len(v["loss"])):
            lines.append(f"| {k + 1} | {v['loss'][k]:.6f} | {t['loss'][k]:.6f} | {abs(v['loss'][k] - t['loss'][k]):.1e}"
                         f" | {v['grad_norm'][k]:.5f} | {t['grad_norm'][k]:.5f} | {v['rewards/margins'][k]:.5f} | "
                         f"{t['rewards/margins'][k]:.5f} | {row['verl']['step_times'][k]:.3f} | "
                         f"{row['trl']['step_times'][k]:.3f} |")
        d = row["max_diff"]
        lines += ["", f"Largest |difference| over the {len(v['loss'])} steps: loss {d['loss']:.2e} (target <= "
                  f"{LOSS_TOLERANCE:g}: {'MET' if row['loss_met'] else 'NOT MET'}), grad norm {d['grad_norm']:.2e}, "
                  f"rewards/margins {d['rewards/margins']:.2e}, logps/chosen {d['logps/chosen']:.2e}, "
                  f"rewards/accuracies {d['rewards/accuracies']:.2e}."]
    return "\n".join(lines)


def targets(results: dict) -> list[dict]:
    out = []
    for row in results["models"]:
        out.append(results_json.target(f"DPO step speedup vs TRL DPOTrainer, {row['model']}", row["speedup"],
                                       f">= {SPEEDUP_TARGET:.0f}x", row["met"]))
        out.append(results_json.target(f"DPO loss curve max |verl-cpp - TRL|, {row['model']}",
                                       row["max_diff"]["loss"], f"<= {LOSS_TOLERANCE:g}", row["loss_met"], unit=""))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trl-python", default=os.path.expanduser("~/.cache/verl-cpp/trl-venv/bin/python"),
                    help="python of the TRL venv (benchmarks/grpo_step/setup_trl_venv.sh)")
    ap.add_argument("--models", nargs="+", default=["tiny", "small"], choices=list(common.MODELS))
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lr", type=float, default=1e-4, help="AdamW lr on both sides")
    ap.add_argument("--beta", type=float, default=0.1)
    ap.add_argument("--warmup", type=int, default=1, help="warm-up steps (in the loss curve, not in the timings)")
    ap.add_argument("--pairs", type=int, default=16, help="pairs per optimizer step, tiny model")
    ap.add_argument("--micro-pairs", type=int, default=8, help="pairs per micro-batch, tiny model")
    ap.add_argument("--prompt-tokens", type=int, default=64, help="about this many prompt tokens (+-25%%), tiny")
    ap.add_argument("--completion-tokens", type=int, nargs=2, default=[32, 128], metavar=("MIN", "MAX"),
                    help="completion lengths (about, in tokens), tiny")
    ap.add_argument("--steps", type=int, default=8, help="measured steps, tiny model")
    ap.add_argument("--small-pairs", type=int, default=4)
    ap.add_argument("--small-micro-pairs", type=int, default=2)
    ap.add_argument("--small-prompt-tokens", type=int, default=64)
    ap.add_argument("--small-completion-tokens", type=int, nargs=2, default=[32, 128], metavar=("MIN", "MAX"))
    ap.add_argument("--small-steps", type=int, default=3)
    ap.add_argument("--runs", type=int, default=1, help="runs of each side, alternating (timings pooled over the "
                    "runs' measured steps; the curves are the first run's)")
    ap.add_argument("--trl-first", action="store_true", help="run the TRL side before verl-cpp's")
    ap.add_argument("--quick", action="store_true", help="smoke run at a tiny size (not a measurement)")
    ap.add_argument("--workdir", default=None, help="checkpoints and per-side outputs (default: a temporary dir)")
    ap.add_argument("--results-json", default=None)
    ap.add_argument("--results-md", default=None)
    ap.add_argument("--from-json", default=None, metavar="PATH",
                    help="no run: re-render the report of a --results-json file (to stdout and --results-md)")
    args = ap.parse_args(argv)
    if args.from_json:
        with open(args.from_json, encoding="utf-8") as f:
            payload = json.load(f)
        text = report(payload.get("data", payload))
        print(text)
        if args.results_md:
            with open(args.results_md, "w", encoding="utf-8") as f:
                f.write(text + "\n")
        return 0
    if args.quick:
        args.pairs, args.micro_pairs, args.prompt_tokens, args.completion_tokens, args.steps = 4, 2, 16, [8, 16], 2
        args.small_pairs, args.small_micro_pairs, args.small_prompt_tokens = 2, 1, 16
        args.small_completion_tokens, args.small_steps = [8, 16], 1
    if not os.path.exists(args.trl_python):
        ap.error(f"--trl-python {args.trl_python} does not exist (run benchmarks/grpo_step/setup_trl_venv.sh)")
    args.python = {"verl": sys.executable, "trl": args.trl_python}

    import torch

    start = time.perf_counter()
    env = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cpu": machine()["cpu"],
           "threads": args.threads, "loadavg_start": load_average(), "torch_version": torch.__version__,
           "trl_version": package_version(args.trl_python, "trl"),
           "transformers_version": package_version(args.trl_python, "transformers")}
    peak = gemm_peak("float32", args.threads)
    print(f"threads={args.threads}; torch.mm fp32 peak {peak / 1e9:.1f} GFLOP/s", flush=True)
    tmp = None
    workdir = args.workdir
    if workdir is None:
        tmp = tempfile.TemporaryDirectory(prefix="dpo-bench-")
        workdir = tmp.name
    os.makedirs(workdir, exist_ok=True)
    results = {"environment": env, "peak_fp32": peak,
               "args": {k: v for k, v in vars(args).items() if k != "python"}, "models": []}
    for model in args.models:
        checkpoint = os.path.join(workdir, model)
        common.write_checkpoint(checkpoint, model, seed=args.seed)
        results["models"].append(bench_model(args, model, checkpoint, peak, workdir))
    env["loadavg_end"] = load_average()
    results["seconds"] = time.perf_counter() - start
    text = report(results)
    print()
    print(text)
    if args.results_json:
        os.makedirs(os.path.dirname(os.path.abspath(args.results_json)), exist_ok=True)
        results_json.write(args.results_json, title="DPO step: verl-cpp vs TRL DPOTrainer", report=text,
                           targets=targets(results), data=results)
    if args.results_md:
        with open(args.results_md, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
