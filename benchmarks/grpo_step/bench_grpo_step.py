"""Whole GRPO step: verl-cpp's ``verl.PPOTrainer`` vs TRL's ``trl.GRPOTrainer`` (transformers generation), on the CPU.

Same task, same random-init Qwen2-architecture checkpoint (the rollout benchmark's ``tiny`` ~3.7M and ``small``
~100M models, written once), same plain-text prompts in the same order, same tokenizer, same thread count, same
hyperparameters: GRPO, n = 8 generations per prompt, P prompts per step, up to R new tokens at temperature 1 (no
top-k / top-p), AdamW at a constant lr with weight decay 0 and grad clip 1, beta = 0 (no reference model), clip
eps = 0.2, one update per batch (TRL num_iterations = 1; verl-cpp ppo_epochs = 1 with ppo_mini_batch_size = the
whole batch), micro-batches of 16 sequences on both sides, token-mean loss aggregation (verl's ``token-mean`` =
TRL's ``loss_type="dapo"``: token losses summed over the whole accumulated batch and divided by its number of
response tokens), group-normalised advantages (verl's GRPO with norm_adv_by_std_in_grpo = TRL's
scale_rewards="group"), gradient checkpointing off. Each side runs in its own process (grpo_sides.py): TRL under
the TRL venv's python (setup_trl_venv.sh), verl-cpp under this one.

1. speed   -- per model: 1 warm-up step, then >= 3 measured steps; step time (median, min-max), generated tokens/s,
              the generation / log-prob / update / other split (grpo_sides.py says how each is measured), the
              ratio TRL / verl-cpp, and MFU of generation (verl's forward FLOPs of the P*n sequences over the
              generation time) and of training (verl's forward+backward FLOPs over the update time) against the fp32
              and bf16 ``torch.mm`` peak measured in the same run. The tokenizer's EOS lies outside the model's
              vocabulary, so both sides generate exactly R tokens per sample.
2. reward  -- the learnable toy task (grpo_common.toy_reward: the fraction of response tokens among the lowest
              eighth of the vocabulary) on the tiny model, N steps on both sides with shorter responses; reward per
              step and the mean of the last steps.
4. precision -- verl-cpp only, per model at the speed part's workload: fsdp_config.dtype float32 (no mixed
              precision) and bfloat16 (verl's default: fp32 master weights, bf16 compute copy) as two trainers in one
              process, their steps alternating; the phases side by side and the bf16 / fp32 time ratio.
3. scaling -- verl-cpp only, tiny model: step time vs response length (128..1024, at 4 prompts per step) and vs
              prompts per step (8..64, at 64 tokens), 1 warm-up + 2 measured steps per point, with the power-law
              exponent fitted by log-log least squares (--full: at the issue's 16 prompts / 256 tokens).

The small model at the issue's full workload (16 prompts x 8 x 256 tokens) takes many minutes per step on 2 CPU
cores on the TRL side; by default it runs a reduced workload (--small-prompts / --small-max-tokens, printed with
the results, identical on both sides); --full runs the issue's workload everywhere.

    python benchmarks/grpo_step/bench_grpo_step.py --trl-python ~/.cache/verl-cpp/trl-venv/bin/python \\
        --results-md benchmarks/grpo_step/RESULTS.md --results-json build/bench/grpo_step.json
    python benchmarks/grpo_step/bench_grpo_step.py --quick ...     # a smoke run of every part (a few minutes)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import grpo_common as common  # noqa: E402

sys.path.insert(0, os.path.dirname(HERE))
import results_json  # noqa: E402  (benchmarks/results_json.py: the roll-up's JSON format)
from bench_env import gemm_peak, load_average, machine, package_version  # noqa: E402

SIDES = ("verl", "trl")
PARTS = ("speed", "reward", "scaling", "precision")


def default_parts() -> list[str]:
    """Every part, less ``precision`` on a CPU without bf16 matrix instructions (said on stdout): there bf16 GEMMs
    are emulated (this AVX2 EPYC: torch.mm bf16 0.6 vs fp32 56 GFLOP/s), and the part's bf16 trainer takes hours."""
    from verl import _C

    if _C.workers.cpu_has_native_bf16_matmul():
        return list(PARTS)
    print("precision: skipped -- this CPU has no bf16 matrix instructions (AVX512-BF16 / AMX), so bf16 is emulated "
          "and the part would take hours; run it with --parts precision", flush=True)
    return [p for p in PARTS if p != "precision"]

LABEL = {"verl": "verl-cpp", "trl": "TRL"}
TARGETS = {"tiny": 5.0, "small": 2.0}  # step-time speedup over TRL, from the issue


def run_side(side: str, spec: dict, python: str, workdir: str, tag: str) -> dict:
    spec_path = os.path.join(workdir, f"{tag}-{side}.spec.json")
    out_path = os.path.join(workdir, f"{tag}-{side}.out.json")
    with open(spec_path, "w", encoding="utf-8") as f:
        json.dump(spec, f)
    env = dict(os.environ, OMP_NUM_THREADS=str(spec["threads"]), TOKENIZERS_PARALLELISM="false",
               PYTHONWARNINGS="ignore")
    t0 = time.perf_counter()
    proc = subprocess.run([python, os.path.join(HERE, "grpo_sides.py"), side, spec_path, out_path], env=env,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{LABEL[side]} side of {tag} failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    with open(out_path, encoding="utf-8") as f:
        result = json.load(f)
    result["wall_s"] = time.perf_counter() - t0
    print(f"  {tag}: {LABEL[side]} done in {result['wall_s']:.0f} s", flush=True)
    return result


def spec_for(args, model: str, checkpoint: str, prompts: int, max_tokens: int, warmup: int, steps: int,
             prompt_seed: int) -> dict:
    total = (warmup + steps) * prompts
    return dict(model=model, checkpoint=checkpoint, prompts_per_step=prompts, n=args.n, max_tokens=max_tokens,
                micro_batch=min(args.micro_batch, prompts * args.n), warmup=warmup, steps=steps, lr=args.lr,
                seed=args.seed, threads=args.threads,
                prompts=common.make_prompt_texts(total, args.prompt_tokens, prompt_seed))


def speed_summary(result: dict, spec: dict, peaks: dict) -> dict:
    """Medians (min-max) over the measured steps of one side: step time, phases, tokens/s, MFU."""
    measured = result["steps"][spec["warmup"]:]
    phases = [common.phase_split(s["step_s"], s["generation_s"], s["log_prob_s"], s["update_s"]) for s in measured]
    generated = spec["prompts_per_step"] * spec["n"] * spec["max_tokens"]
    out = {name: common.summarize([p[name] for p in phases]) for name in common.PHASES + ("step",)}
    out["generated_tokens_per_step"] = generated
    out["tokens_per_s"] = common.summarize([generated / p["step"] for p in phases])
    # verl's estimate per step, once: forward + backward for the update, the forward only for generation.
    train_flops = [common.verl_flops(spec["model"], s["seqlens"]) for s in measured]
    infer_flops = [common.verl_flops(spec["model"], s["seqlens"], forward_only=True) for s in measured]
    for dtype, peak in peaks.items():
        out[f"mfu_generation_{dtype}"] = common.summarize(
            [common.mfu(f, p["generation"], peak) for f, p in zip(infer_flops, phases)])
        out[f"mfu_update_{dtype}"] = common.summarize(
            [common.mfu(f, p["update"], peak) for f, p in zip(train_flops, phases)])
    out["peak_rss_mb"] = result["peak_rss_mb"]
    out["mean_seqlen"] = sum(sum(s["seqlens"]) for s in measured) / sum(len(s["seqlens"]) for s in measured)
    return out


def bench_speed(args, checkpoints: dict, peaks: dict, workdir: str) -> list[dict]:
    rows = []
    for model in args.models:
        prompts, max_tokens, steps = args.prompts, args.max_tokens, args.steps
        if model == "small":
            prompts, max_tokens, steps = args.small_prompts, args.small_max_tokens, args.small_steps
        spec = spec_for(args, model, checkpoints[model], prompts, max_tokens, args.warmup, steps, prompt_seed=1)
        row = {"model": model, "workload": {k: spec[k] for k in ("prompts_per_step", "n", "max_tokens", "warmup",
                                                                 "steps", "micro_batch", "lr", "threads")}}
        print(f"speed/{model}: {prompts} prompts x {args.n} x {max_tokens} tokens, {args.warmup} warm-up + "
              f"{steps} measured steps", flush=True)
        for side in SIDES:
            result = run_side(side, spec, args.python[side], workdir, f"speed-{model}")
            row[side] = speed_summary(result, spec, peaks)
            row[side]["steps"] = [{k: v for k, v in s.items() if k != "seqlens"} for s in result["steps"]]
        row["speedup"] = row["trl"]["step"]["median"] / row["verl"]["step"]["median"]
        row["phase_speedup"] = {name: (row["trl"][name]["median"] / row["verl"][name]["median"]
                                       if row["verl"][name]["median"] > 0 else None) for name in common.PHASES}
        row["target"] = TARGETS.get(model)
        row["met"] = row["target"] is not None and row["speedup"] >= row["target"]
        rows.append(row)
    return rows


PRECISIONS = ("float32", "bfloat16")


def bench_precision(args, checkpoints: dict, peaks: dict, workdir: str) -> list[dict]:
    """verl-cpp at fsdp_config.dtype float32 and bfloat16, one process, alternating steps, the speed workload."""
    rows = []
    for model in args.models:
        prompts, max_tokens, steps = args.prompts, args.max_tokens, args.steps
        if model == "small":
            prompts, max_tokens, steps = args.small_prompts, args.small_max_tokens, args.small_steps
        spec = spec_for(args, model, checkpoints[model], prompts, max_tokens, args.warmup, steps, prompt_seed=1)
        spec["compute_dtypes"] = list(PRECISIONS)
        print(f"precision/{model}: {prompts} prompts x {args.n} x {max_tokens} tokens, fp32 and bf16 compute "
              "alternating in one process", flush=True)
        result = run_side("verl", spec, args.python["verl"], workdir, f"precision-{model}")
        row = {"model": model, "workload": {k: spec[k] for k in ("prompts_per_step", "n", "max_tokens", "warmup",
                                                                 "steps", "micro_batch", "lr", "threads")}}
        for dtype in PRECISIONS:
            one = dict(result, steps=result["by_dtype"][dtype])
            row[dtype] = speed_summary(one, spec, peaks)
            row[dtype]["rollout_probs_diff_max"] = max(s["rollout_probs_diff_max"] for s in one["steps"])
        row["ratio"] = {name: (row["bfloat16"][name]["median"] / row["float32"][name]["median"]
                               if row["float32"][name]["median"] > 0 else None)
                        for name in common.PHASES + ("step",)}
        rows.append(row)
    return rows


def bench_reward(args, checkpoints: dict, workdir: str) -> dict:
    model = "tiny"
    spec = spec_for(args, model, checkpoints[model], args.prompts, args.curve_max_tokens, 0, args.curve_steps,
                    prompt_seed=2)
    print(f"reward/{model}: {args.curve_steps} steps of {args.prompts} prompts x {args.n} x {args.curve_max_tokens} "
          f"tokens", flush=True)
    out = {"model": model, "workload": {k: spec[k] for k in ("prompts_per_step", "n", "max_tokens", "steps", "lr")},
           "window": min(args.curve_window, args.curve_steps)}
    for side in SIDES:
        result = run_side(side, spec, args.python[side], workdir, "reward")
        curve = [s["reward_mean"] for s in result["steps"]]
        window = curve[-out["window"]:]
        out[side] = {"curve": curve, "first": curve[0], "final_mean": statistics.fmean(window),
                     "final_sem": statistics.stdev(window) / math.sqrt(len(window)) if len(window) > 1 else 0.0,
                     "step_s": common.summarize([s["step_s"] for s in result["steps"]])}
    out.update(common.no_worse(out["verl"]["final_mean"], out["verl"]["final_sem"], out["trl"]["final_mean"],
                               out["trl"]["final_sem"]))
    return out


def bench_scaling(args, checkpoints: dict, workdir: str) -> dict:
    model = "tiny"
    out = {"model": model, "warmup": 1, "steps": args.scaling_steps}
    for axis, values in (("max_tokens", args.scaling_lengths), ("prompts_per_step", args.scaling_prompts)):
        points = []
        for value in values:
            prompts = value if axis == "prompts_per_step" else args.scaling_fixed_prompts
            max_tokens = value if axis == "max_tokens" else args.scaling_fixed_tokens
            spec = spec_for(args, model, checkpoints[model], prompts, max_tokens, 1, args.scaling_steps, prompt_seed=3)
            result = run_side("verl", spec, args.python["verl"], workdir, f"scaling-{axis}-{value}")
            measured = result["steps"][1:]
            step = common.summarize([s["step_s"] for s in measured])
            phases = {name: common.summarize([s[f"{name}_s"] for s in measured])["median"]
                      for name in ("generation", "log_prob", "update")}
            points.append({"value": value, "step_s": step, "phases": phases,
                           "tokens_per_s": prompts * args.n * max_tokens / step["median"]})
            print(f"  scaling {axis}={value}: {step['median']:.2f} s/step", flush=True)
        fit = common.fit_power_law([p["value"] for p in points], [p["step_s"]["median"] for p in points])
        out[axis] = {"points": points, "fit": fit,
                     "fixed": {"prompts_per_step": args.scaling_fixed_prompts} if axis == "max_tokens" else
                     {"max_tokens": args.scaling_fixed_tokens}}
    return out


# ---- report ----------------------------------------------------------------------------------------------------

def _mmm(s: dict, fmt: str = "{:.2f}", scale: float = 1.0) -> str:
    return f"{fmt.format(s['median'] * scale)} ({fmt.format(s['min'] * scale)}-{fmt.format(s['max'] * scale)})"


def report(results: dict) -> str:
    lines = []
    env = results["environment"]
    peaks = results["peaks"]
    lines += ["# Whole GRPO step: verl-cpp vs TRL", "",
              f"Generated by `benchmarks/grpo_step/bench_grpo_step.py` ({env['date']}; {env['cpu']}, "
              f"{env['threads']} torch threads on both sides, load average before the run {env['loadavg']}; "
              f"trl {env.get('trl_version', '?')}, transformers {env.get('transformers_version', '?')}, "
              f"torch {env['torch_version']}). Total time {results['seconds']:.0f} s.", "",
              f"`torch.mm` 1024^3 peak measured in the same run: fp32 {peaks['float32'] / 1e9:.1f} GFLOP/s, "
              f"bf16 {peaks['bfloat16'] / 1e9:.1f} GFLOP/s (the models run in fp32).", "",
              "Same checkpoint, prompts, tokenizer and hyperparameters on both sides: GRPO, n = 8, temperature 1, "
              "AdamW constant lr, beta = 0, clip eps = 0.2, one update per batch (TRL num_iterations = 1, verl-cpp "
              "ppo_epochs = 1 with one mini-batch), micro-batches of 16, token-mean loss (verl `token-mean` = TRL "
              "`loss_type=\"dapo\"`). EOS is outside the models' vocabulary, so every sample is exactly max_tokens "
              "long. Phases: generation = sampling (TRL `_generate_single_turn`, verl-cpp `timing_s/gen`); log-prob = "
              "teacher-forced passes before the update (TRL: none, it reuses the loss forward's detached log-probs "
              "when on-policy; verl-cpp: `timing_s/old_log_prob`, verl's recomputation, which it skips as TRL does "
              "when the update's own forward gives the same numbers bit for bit, actor.old_log_prob_from_update); "
              "update = loss forward + "
              "backward + optimizer (TRL: step minus `_generate_and_score_completions`; verl-cpp: "
              "`timing_s/update_actor`); other = the rest (reward, advantages, batching). Median (min-max).", "",
              "MFU = verl's FLOP estimate (forward only for generation, over the P x n full sequences on both sides; "
              "forward + backward for the update) / phase time / measured `torch.mm` peak. verl's formula counts the "
              "embedding lookup as a matmul (2 x vocab x hidden, 2.1M of the tiny model's 3.7M and 49M of the small "
              "model's 125M 'dense' parameters), so it overstates the work and can exceed 100% of the measured peak.",
              ""]
    if results.get("speed"):
        lines += ["## Step time", "",
                  "| model | workload | side | step s | generated tok/s | generation s | log-prob s | update s | "
                  "other s | MFU gen fp32 / bf16 | MFU update fp32 / bf16 | peak RSS MB |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for row in results["speed"]:
            w = row["workload"]
            work = f"{w['prompts_per_step']}x{w['n']}x{w['max_tokens']}, {w['warmup']}+{w['steps']} steps"
            for side in SIDES:
                s = row[side]
                lines.append(
                    f"| {row['model']} | {work} | {LABEL[side]} | {_mmm(s['step'])} | {_mmm(s['tokens_per_s'], '{:.0f}')} | "
                    f"{_mmm(s['generation'])} | {_mmm(s['log_prob'])} | {_mmm(s['update'])} | {_mmm(s['other'])} | "
                    f"{100 * s['mfu_generation_float32']['median']:.1f}% / {100 * s['mfu_generation_bfloat16']['median']:.1f}% | "
                    f"{100 * s['mfu_update_float32']['median']:.1f}% / {100 * s['mfu_update_bfloat16']['median']:.1f}% | "
                    f"{s['peak_rss_mb']:.0f} |")
        lines += ["", "| model | step speedup (TRL / verl-cpp) | generation | log-prob | update | target | |",
                  "|---|---|---|---|---|---|---|"]
        for row in results["speed"]:
            ps = row["phase_speedup"]
            fmt = {k: (f"{v:.2f}x" if v is not None else "n/a (verl-cpp 0 s)") for k, v in ps.items()}
            if row["trl"]["log_prob"]["median"] == 0:
                fmt["log_prob"] = "both skip it" if row["verl"]["log_prob"]["median"] == 0 else "TRL skips it"
            lines.append(f"| {row['model']} | **{row['speedup']:.2f}x** | {fmt['generation']} | {fmt['log_prob']} | "
                         f"{fmt['update']} | >= {row['target']:.0f}x | {'MET' if row['met'] else 'NOT MET'} |")
        lines.append("")
        for row in results["speed"]:
            if row["trl"]["log_prob"]["median"] == 0 and row["verl"]["log_prob"]["median"] > 0:
                without = row["verl"]["step"]["median"] - row["verl"]["log_prob"]["median"]
                lines.append(f"- {row['model']}: verl-cpp's old-log-prob recomputation is "
                             f"{row['verl']['log_prob']['median']:.1f} s of its {row['verl']['step']['median']:.1f} s "
                             f"step; without it (as TRL when on-policy) the step would be about {without:.1f} s, "
                             f"{row['trl']['step']['median'] / without:.2f}x faster than TRL (an estimate, not measured).")
        a = results.get("args", {})
        if a and (a.get("small_prompts"), a.get("small_max_tokens")) != (a.get("prompts"), a.get("max_tokens")) and \
                "small" in [r["model"] for r in results["speed"]]:
            lines.append(f"- The small model ran a reduced workload ({a['small_prompts']} prompts x {a['n']} x "
                         f"{a['small_max_tokens']} tokens instead of {a['prompts']} x {a['n']} x {a['max_tokens']}) "
                         "to fit the make-bench budget; `--full` runs the issue's workload.")
        lines.append("")
    if results.get("reward"):
        r = results["reward"]
        w = r["workload"]
        lines += ["## Reward curve (toy task, tiny model)", "",
                  f"Reward = fraction of response tokens with id < vocab/8 (random init: ~0.125). {w['steps']} steps of "
                  f"{w['prompts_per_step']} prompts x {w['n']} x {w['max_tokens']} tokens (shorter responses than "
                  f"the speed runs), lr {w['lr']}. Final = mean of the last {r['window']} steps.", "",
                  "| side | first step | final | step s |", "|---|---|---|---|"]
        for side in SIDES:
            lines.append(f"| {LABEL[side]} | {r[side]['first']:.3f} | {r[side]['final_mean']:.3f} | "
                         f"{_mmm(r[side]['step_s'])} |")
        lines += ["", f"Reward after {w['steps']} steps no worse than TRL's (within 2 standard errors of the two "
                  f"final-window means, {r['tolerance']:.3f}): **{'MET' if r['met'] else 'NOT MET'}** "
                  f"({r['verl']['final_mean']:.3f} vs {r['trl']['final_mean']:.3f}; strictly higher: "
                  f"{'yes' if r['strictly_higher'] else 'no'}).", "",
                  "| step | " + " | ".join(str(i + 1) for i in range(len(r["verl"]["curve"]))) + " |",
                  "|---|" + "---|" * len(r["verl"]["curve"])]
        for side in SIDES:
            lines.append(f"| {LABEL[side]} | " + " | ".join(f"{v:.2f}" for v in r[side]["curve"]) + " |")
        lines.append("")
    if results.get("scaling"):
        sc = results["scaling"]
        lines += ["## Scaling (verl-cpp, tiny model)", "",
                  f"{sc['warmup']} warm-up + {sc['steps']} measured steps per point; power law step_s ~ a * x^k fitted "
                  "by least squares in log-log.", ""]
        for axis, title in (("max_tokens", "response length"), ("prompts_per_step", "prompts per step")):
            d = sc[axis]
            fixed = ", ".join(f"{k} = {v}" for k, v in d["fixed"].items())
            lines += [f"Step time vs {title} ({fixed}): exponent **k = {d['fit']['exponent']:.2f}** "
                      f"(R^2 {d['fit']['r2']:.3f}).", "",
                      f"| {title} | step s | generation s | log-prob s | update s | generated tok/s |",
                      "|---|---|---|---|---|---|"]
            for p in d["points"]:
                lines.append(f"| {p['value']} | {_mmm(p['step_s'])} | {p['phases']['generation']:.2f} | "
                             f"{p['phases']['log_prob']:.2f} | {p['phases']['update']:.2f} | {p['tokens_per_s']:.0f} |")
            lines.append("")
    if results.get("precision"):
        lines += ["## Mixed precision (verl-cpp): fsdp_config.dtype float32 vs bfloat16, one process", "",
                  "The same workload as the speed table, two trainers in one process with their steps alternating: "
                  "float32 (no mixed precision, as in the TRL comparison above) and bfloat16 (verl's default: fp32 "
                  "master weights and AdamW state, forward/backward on a bf16 copy, the rollout from that copy). "
                  "Seconds, median (min-max) over the measured steps; ratio = bf16 / fp32 (< 1: bf16 faster).", "",
                  "| model | compute | step s | generation s | log-prob s | update s | max rollout-vs-trainer "
                  "log-prob diff |", "|---|---|---|---|---|---|---|"]
        for row in results["precision"]:
            for dtype in PRECISIONS:
                r = row[dtype]
                lines.append(f"| {row['model']} | {dtype} | {_mmm(r['step'])} | {_mmm(r['generation'])} | "
                             f"{_mmm(r['log_prob'])} | {_mmm(r['update'])} | {r['rollout_probs_diff_max']:.2g} |")
            ratio = {k: ("n/a (0 s)" if v is None else f"{v:.2f}") for k, v in row["ratio"].items()}
            lines.append(f"| {row['model']} | ratio bf16/fp32 | {ratio['step']} | {ratio['generation']} | "
                         f"{ratio['log_prob']} | {ratio['update']} | |")
        lines.append("")
    return "\n".join(lines)


def targets(results: dict) -> list[dict]:
    """The issue's targets in results_json's form (bench_all.py's roll-up table)."""
    out = []
    for row in results.get("speed", []):
        w = row["workload"]
        if row["target"] is not None:
            out.append(results_json.target(
                f"GRPO step speedup vs TRL, {row['model']} ({w['prompts_per_step']}x{w['n']}x{w['max_tokens']})",
                row["speedup"], f">= {row['target']:g}x", row["met"]))
    r = results.get("reward")
    if r:
        out.append(results_json.target(
            f"toy-task reward after {r['workload']['steps']} steps (TRL {r['trl']['final_mean']:.3f})",
            r["verl"]["final_mean"], f">= TRL's - {r['tolerance']:.3f} (2 s.e.)", r["met"], unit=""))
    sc = results.get("scaling")
    if sc:
        for axis, label in (("max_tokens", "response length"), ("prompts_per_step", "prompts per step")):
            out.append(results_json.target(f"step-time exponent vs {label} (verl-cpp)", sc[axis]["fit"]["exponent"],
                                           "reported", None, unit=""))
    for row in results.get("precision", []):
        out.append(results_json.target(f"update time bf16 / fp32 compute, {row['model']} (verl-cpp)",
                                       row["ratio"]["update"], "reported", None, unit="x"))
    return out


def environment(args) -> dict:
    import torch

    env = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cpu": machine()["cpu"],
           "threads": args.threads, "loadavg": load_average(),
           "torch_version": torch.__version__, "python": dict(args.python),
           "trl_version": package_version(args.python["trl"], "trl"),
           "transformers_version": package_version(args.python["trl"], "transformers")}
    return env


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trl-python", default=os.path.expanduser("~/.cache/verl-cpp/trl-venv/bin/python"),
                    help="python of the TRL venv (benchmarks/grpo_step/setup_trl_venv.sh)")
    ap.add_argument("--parts", nargs="+", default=None, choices=PARTS,
                    help="default: all, but 'precision' only on a CPU with bf16 matrix instructions (AVX512-BF16 / "
                         "AMX; elsewhere bf16 is emulated and the part takes hours) unless named here")
    ap.add_argument("--models", nargs="+", default=["tiny", "small"], choices=list(common.MODELS))
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lr", type=float, default=1e-3, help="AdamW lr on both sides (random-init models learn the "
                    "toy task in a few dozen steps at 1e-3)")
    ap.add_argument("--n", type=int, default=8, help="generations per prompt")
    ap.add_argument("--prompts", type=int, default=16, help="prompts per step (tiny model, reward curve)")
    ap.add_argument("--max-tokens", type=int, default=256, help="new tokens per sample (tiny model)")
    ap.add_argument("--prompt-tokens", type=int, default=52, help="about this many prompt tokens (+-25%%)")
    ap.add_argument("--micro-batch", type=int, default=16, help="sequences per forward/backward micro-batch")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--steps", type=int, default=3, help="measured steps per side (tiny model)")
    ap.add_argument("--small-prompts", type=int, default=2, help="prompts per step for the small model (reduced "
                    "from the issue's 16 to fit the make-bench budget on 2 cores; --full restores it)")
    ap.add_argument("--small-max-tokens", type=int, default=128, help="new tokens per sample, small model")
    ap.add_argument("--small-steps", type=int, default=3, help="measured steps per side, small model")
    ap.add_argument("--curve-steps", type=int, default=30)
    ap.add_argument("--curve-max-tokens", type=int, default=32)
    ap.add_argument("--curve-window", type=int, default=5, help="final reward = mean of the last steps")
    ap.add_argument("--scaling-lengths", type=int, nargs="+", default=[128, 256, 512, 1024])
    ap.add_argument("--scaling-prompts", type=int, nargs="+", default=[8, 16, 32, 64])
    ap.add_argument("--scaling-steps", type=int, default=2, help="measured steps per scaling point (after 1 warm-up)")
    ap.add_argument("--scaling-fixed-prompts", type=int, default=4, help="prompts per step along the response-length "
                    "axis (reduced from 16 to fit the budget; --full restores it)")
    ap.add_argument("--scaling-fixed-tokens", type=int, default=64, help="response length along the prompts axis "
                    "(reduced from 256; --full restores it)")
    ap.add_argument("--full", action="store_true", help="the issue's workload everywhere: small model at 16 prompts "
                    "x 8 x 256 tokens, 3 measured steps per scaling point (long on a small CPU)")
    ap.add_argument("--quick", action="store_true", help="smoke run: every part at a tiny size (not a measurement)")
    ap.add_argument("--workdir", default=None, help="checkpoints and per-side outputs (default: a temporary dir)")
    ap.add_argument("--results-json", default=None)
    ap.add_argument("--results-md", default=None)
    ap.add_argument("--from-json", default=None, metavar="PATH",
                    help="no run: re-render the report of a --results-json file (to stdout and --results-md)")
    args = ap.parse_args(argv)
    if args.from_json:
        with open(args.from_json, encoding="utf-8") as f:
            payload = json.load(f)
        text = report(payload.get("data", payload))  # results_json's envelope, or the bare results
        print(text)
        if args.results_md:
            with open(args.results_md, "w", encoding="utf-8") as f:
                f.write(text + "\n")
        return 0
    if args.parts is None:
        args.parts = default_parts()
    if args.full:
        args.small_prompts, args.small_max_tokens, args.small_steps = args.prompts, args.max_tokens, args.steps
        args.scaling_steps, args.scaling_fixed_prompts, args.scaling_fixed_tokens = 3, args.prompts, args.max_tokens
    if args.quick:
        args.prompts, args.max_tokens, args.steps = 4, 32, 2
        args.small_prompts, args.small_max_tokens, args.small_steps = 2, 16, 2
        args.curve_steps, args.curve_max_tokens = 4, 16
        args.scaling_lengths, args.scaling_prompts, args.scaling_steps = [16, 32], [2, 4], 1
        args.scaling_fixed_prompts, args.scaling_fixed_tokens = 2, 16
    if not os.path.exists(args.trl_python) and any(p in args.parts for p in ("speed", "reward")):
        ap.error(f"--trl-python {args.trl_python} does not exist (run benchmarks/grpo_step/setup_trl_venv.sh)")
    args.python = {"verl": sys.executable, "trl": args.trl_python}

    start = time.perf_counter()
    env = environment(args)
    peaks = {d: gemm_peak(d, args.threads) for d in ("float32", "bfloat16")}  # also sets torch's threads
    print(f"threads={args.threads}; torch.mm peak fp32 {peaks['float32'] / 1e9:.1f} GFLOP/s, bf16 "
          f"{peaks['bfloat16'] / 1e9:.1f} GFLOP/s", flush=True)
    tmp = None
    workdir = args.workdir
    if workdir is None:
        tmp = tempfile.TemporaryDirectory(prefix="grpo-bench-")
        workdir = tmp.name
    os.makedirs(workdir, exist_ok=True)
    models = set(args.models) if {"speed", "precision"} & set(args.parts) else set()
    if {"reward", "scaling"} & set(args.parts):
        models.add("tiny")
    checkpoints = {}
    for model in sorted(models):
        checkpoints[model] = os.path.join(workdir, model)
        common.write_checkpoint(checkpoints[model], model, seed=args.seed)

    results = {"environment": env, "peaks": peaks,
               "args": {k: v for k, v in vars(args).items() if k != "python"}}
    if "speed" in args.parts:
        results["speed"] = bench_speed(args, checkpoints, peaks, workdir)
    if "reward" in args.parts:
        results["reward"] = bench_reward(args, checkpoints, workdir)
    if "scaling" in args.parts:
        results["scaling"] = bench_scaling(args, checkpoints, workdir)
    if "precision" in args.parts:
        results["precision"] = bench_precision(args, checkpoints, peaks, workdir)
    results["seconds"] = time.perf_counter() - start
    # The measurements first, so that a report that fails loses none of them (--from-json renders them again).
    raw_path = os.path.join(workdir if tmp is None else tempfile.gettempdir(), "bench_grpo_step_results.json")
    with open(raw_path, "w", encoding="utf-8") as f:
        json.dump(results, f)
    print(f"measurements saved to {raw_path}", flush=True)
    text = report(results)
    print()
    print(text)
    if args.results_json:
        os.makedirs(os.path.dirname(os.path.abspath(args.results_json)), exist_ok=True)
        results_json.write(args.results_json, title="Whole GRPO step: verl-cpp vs TRL GRPOTrainer", report=text,
                           targets=targets(results), data=results)
    if args.results_md:
        with open(args.results_md, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
