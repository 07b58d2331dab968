"""GRPO with LoRA on a real pretrained model (issue 42): verl-cpp's ``verl.PPOTrainer`` with LoRA r = 32 on every
linear of the decoder vs full fine-tuning, and vs TRL's ``GRPOTrainer`` with a PEFT ``LoraConfig`` of the same rank,
on the same batches, on the CPU. Targets: verl-cpp LoRA's step >= 2x faster than TRL + PEFT's, and its peak RSS no
higher.

The model is SmolLM2-135M-Instruct (real weights: tools/prepare_models.py makes its Hugging Face checkpoint; Llama
architecture, 30 layers, hidden 576, vocab 49,152, tied embeddings). Each configuration runs in its own process
(benchmarks/grpo_step/grpo_sides.py, the GRPO-step benchmark's sides, so its peak RSS is its own), one after the
other in one run:

    verl-lora        verl-cpp, actor_rollout_ref.model.lora_rank=32 lora_alpha=64 target_modules=all-linear, fp32
    verl-lora-merge  verl-lora with actor_rollout_ref.model.lora.merge=true (verl's key): the rollout generates from
                     a copy with the adapters folded in, refreshed at every hand-over (faster sampling, one more copy
                     of the weights); verl-lora, the default, generates with the adapters unmerged
    verl-full        verl-cpp, full fine-tuning, fp32
    trl-lora         TRL GRPOTrainer + peft.LoraConfig(r=32, lora_alpha=64, target_modules="all-linear"), fp32
    trl-full         TRL GRPOTrainer, full fine-tuning, fp32 (not run by default: --configs ... trl-full)
    verl-lora-auto   verl-cpp LoRA at its default compute dtype (fsdp_config.dtype=auto: bf16 on CPUs with AVX512-BF16
                     / AMX, fp32 elsewhere): what a user gets without pinning fp32 (not compared with TRL)

Same hyperparameters as benchmarks/grpo_step (GRPO, n = 8, temperature 1 without top-k / top-p, beta = 0, clip 0.2,
one update per batch: TRL num_iterations = 1, verl-cpp one epoch of one mini-batch; token-mean loss = TRL
loss_type="dapo"; micro-batches of 16 on both sides; AdamW at a constant lr, weight decay 0, grad clip 1). Prompts:
short questions rendered with the model's ChatML template into plain text, whose token ids are checked identical
under transformers' tokenizer (TRL's) and verl-cpp's. A real model samples its EOS (<|im_end|>), so both sides run
with EOS ignored and generate exactly max_tokens per sample (verl-cpp: actor_rollout_ref.rollout.ignore_eos=true;
TRL: generation_kwargs min_new_tokens = max_tokens, which masks the EOS ids); the generated token counts are
checked from each side's own records. Compute in fp32 on both sides (TRL on the CPU runs fp32; verl-cpp's default
``auto`` would be bf16 on this CPU, so actor_rollout_ref.actor.fsdp_config.dtype=float32 is pinned, and the
verl-lora-auto row shows the default). The reward is grpo_common's toy reward on token ids (fraction of response
tokens with id < vocab / 8): its value does not matter for timing, and both sides compute the same. Every
configuration's process inherits this one's OpenMP environment: ``import verl`` sets GOMP_SPINCOUNT=3000 (unless a
wait policy is set), so TRL's threads spin as briefly as verl-cpp's (recorded in the report); the load average before
and after each configuration is recorded too (this 2-core machine is shared).

    python benchmarks/lora/bench_lora_grpo.py --trl-python ~/.cache/verl-cpp/trl-venv/bin/python \\
        --results-md benchmarks/lora/RESULTS.md --results-json build/bench/lora_grpo.json
    python benchmarks/lora/bench_lora_grpo.py --quick ...            # a smoke run (not a measurement)
    python benchmarks/lora/bench_lora_grpo.py --configs verl-lora verl-full    # verl-cpp only, no TRL venv needed
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
REPO = os.path.dirname(BENCH)
sys.path.insert(0, os.path.join(BENCH, "grpo_step"))
sys.path.insert(0, BENCH)

import grpo_common as common  # noqa: E402
import results_json  # noqa: E402  (benchmarks/results_json.py: the roll-up's JSON format)
from bench_env import gemm_peak, load_average, machine, package_version  # noqa: E402

MODEL = "SmolLM2-135M-Instruct"
#: SmolLM2-135M's shapes, for verl's FLOP estimate (grpo_common.verl_flops takes a mapping)
SHAPES = dict(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9,
              num_key_value_heads=3, head_dim=64)

CONFIGS = {
    "verl-lora": {"side": "verl", "lora": True, "dtype": "float32", "label": "verl-cpp LoRA r=32 (fp32)"},
    "verl-lora-merge": {"side": "verl", "lora": True, "dtype": "float32", "merge": True,
                        "label": "verl-cpp LoRA r=32, merged rollout (fp32)"},
    "verl-full": {"side": "verl", "lora": False, "dtype": "float32", "label": "verl-cpp full FT (fp32)"},
    "trl-lora": {"side": "trl", "lora": True, "dtype": "float32", "label": "TRL + PEFT LoRA r=32 (fp32)"},
    "trl-full": {"side": "trl", "lora": False, "dtype": "float32", "label": "TRL full FT (fp32)"},
    "verl-lora-auto": {"side": "verl", "lora": True, "dtype": "auto",
                       "label": "verl-cpp LoRA r=32 (default dtype auto)"},
}
#: run order: the two configurations of the main target next to each other
DEFAULT_CONFIGS = ["verl-lora", "trl-lora", "verl-lora-merge", "verl-full", "verl-lora-auto"]
STEP_TARGET = 2.0  # TRL-LoRA / verl-cpp-LoRA step time, from the issue

QUESTIONS = [
    "What is the capital of France?", "Write a haiku about autumn rain.", "Explain photosynthesis in simple words.",
    "Give me three tips for learning a new language.", "Why is the sky blue?", "What does a compiler do?",
    "Describe the water cycle.", "How do vaccines work?", "Write a short poem about the sea.",
    "What is the difference between weather and climate?", "Name three famous painters and one work by each.",
    "How does a bicycle stay upright?", "Summarize the plot of Romeo and Juliet.", "What is machine learning?",
    "Suggest a healthy breakfast.", "Why do cats purr?",
]


def prompt_texts(checkpoint: str, count: int) -> list[str]:
    """``count`` user questions rendered with the model's chat template (generation prompt added) into plain text;
    both sides tokenize these strings (TRL leaves plain-text prompts as they are)."""
    import transformers

    tok = transformers.AutoTokenizer.from_pretrained(checkpoint)
    return [tok.apply_chat_template([{"role": "user", "content": QUESTIONS[i % len(QUESTIONS)]}], tokenize=False,
                                    add_generation_prompt=True) for i in range(count)]


def check_same_prompt_ids(checkpoint: str, texts: list[str]) -> list[int]:
    """The prompts' token ids under transformers' tokenizer (TRL's side) and verl-cpp's are identical: their
    lengths."""
    import transformers

    import verl

    hf = transformers.AutoTokenizer.from_pretrained(checkpoint)(text=texts)["input_ids"]
    ours = verl.load_tokenizer(checkpoint).batch_encode(texts, add_special_tokens=False)
    if [list(x) for x in hf] != [list(x) for x in ours]:
        raise RuntimeError("the prompts' token ids differ between transformers' tokenizer and verl-cpp's")
    return [len(x) for x in hf]


def make_spec(args, config: str, checkpoint: str, texts: list[str]) -> dict:
    c = CONFIGS[config]
    spec = dict(model=MODEL, vocab_size=SHAPES["vocab_size"], checkpoint=checkpoint, prompts=texts,
                prompts_per_step=args.prompts, n=args.n, max_tokens=args.max_tokens,
                micro_batch=min(args.micro_batch, args.prompts * args.n), warmup=args.warmup, steps=args.steps,
                lr=args.lora_lr if c["lora"] else args.lr, seed=args.seed, threads=args.threads, ignore_eos=True)
    if c["lora"]:
        spec.update(lora_rank=args.rank, lora_alpha=args.alpha, target_modules="all-linear")
    if c["side"] == "verl":
        spec["compute_dtypes"] = [c["dtype"]]
        if c.get("merge"):  # verl's key: the rollout generates from a merged copy, refreshed at every hand-over
            spec["verl_overrides"] = ["actor_rollout_ref.model.lora.merge=true"]
    return spec


def _busy_ticks(pid: int) -> tuple[int, int]:
    """(all CPUs' busy clock ticks since boot, process ``pid``'s user + system ticks, all its threads; 0 once it
    is gone)."""
    with open("/proc/stat", encoding="utf-8") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    busy = sum(fields) - fields[3] - (fields[4] if len(fields) > 4 else 0)  # less idle and iowait
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            own = f.read().rsplit(")", 1)[1].split()
        mine = int(own[11]) + int(own[12])  # utime, stime (fields 14 and 15 of proc(5))
    except (OSError, IndexError, ValueError):
        mine = 0
    return busy, mine


def others_cpu_share(before: tuple[float, int, int], after: tuple[float, int, int], cores: int) -> float:
    """The share of the machine's CPU time that processes other than the measured one used between two readings
    (time, busy ticks, the process's ticks): 0 on a quiet machine, 0.5 when a neighbour kept one of 2 cores busy."""
    hz = os.sysconf("SC_CLK_TCK")
    seconds = after[0] - before[0]
    if seconds <= 0:
        return 0.0
    others = (after[1] - before[1]) - (after[2] - before[2])
    return max(0.0, others / hz / seconds / cores)


def run_config(config: str, spec: dict, python: str, workdir: str, tag: str | None = None) -> dict:
    """One configuration in its own process (grpo_sides.py), its per-step lines streamed to the console. Each
    step's record gets ``others_cpu``: the share of the CPUs the rest of the machine used during that step (between
    its line and the one before it; the first step's window starts at the process's start)."""
    side = CONFIGS[config]["side"]
    tag = tag or config
    spec_path = os.path.join(workdir, f"{tag}.spec.json")
    out_path = os.path.join(workdir, f"{tag}.out.json")
    with open(spec_path, "w", encoding="utf-8") as f:
        json.dump(spec, f)
    env = dict(os.environ, OMP_NUM_THREADS=str(spec["threads"]), TOKENIZERS_PARALLELISM="false",
               PYTHONWARNINGS="ignore", PYTHONUNBUFFERED="1")
    cores = os.cpu_count() or 1
    load_before = load_average()
    t0 = time.perf_counter()
    tail: collections.deque = collections.deque(maxlen=60)
    shares = []
    with subprocess.Popen([python, os.path.join(BENCH, "grpo_step", "grpo_sides.py"), side, spec_path, out_path],
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
        reading = (time.perf_counter(), *_busy_ticks(proc.pid))
        for line in proc.stdout:
            tail.append(line)
            if line.startswith(("[verl-cpp", "[TRL]")):
                now = (time.perf_counter(), *_busy_ticks(proc.pid))
                shares.append(others_cpu_share(reading, now, cores))
                reading = now
                print(f"  {tag}: {line.strip()} (others used {100 * shares[-1]:.0f}% of the CPUs)", flush=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{tag} failed (exit {proc.returncode}):\n{''.join(tail)}")
    with open(out_path, encoding="utf-8") as f:
        result = json.load(f)
    for step, share in zip(result["steps"], shares):
        step["others_cpu"] = share
    result["wall_s"] = time.perf_counter() - t0
    result["load_before"], result["load_after"] = load_before, load_average()
    print(f"  {tag}: done in {result['wall_s']:.0f} s (load average {load_before} -> {result['load_after']})",
          flush=True)
    return result


def summarize_config(results: list[dict], spec: dict, prompt_tokens: list[int]) -> dict:
    """Medians (min-max) over the measured steps of every round (each round's process: ``warmup`` steps, then the
    measured ones): step time, phases, generated tokens (counted from the side's own records), tokens/s, the other
    processes' CPU share, the highest peak RSS of the rounds, trainable parameters and AdamW state."""
    P, n = spec["prompts_per_step"], spec["n"]
    phases, generated, others = [], [], []
    for result in results:
        if result["prompt_tokens"] != prompt_tokens[:len(result["prompt_tokens"])]:
            raise RuntimeError(f"{result['side']}: prompt token counts {result['prompt_tokens']} differ from the "
                               f"checked ids' {prompt_tokens}")
        for k, s in enumerate(result["steps"]):
            if k < spec["warmup"]:
                continue
            phases.append(common.phase_split(s["step_s"], s["generation_s"], s["log_prob_s"], s["update_s"]))
            # the step's P prompts, each n times (both sides keep the prompts in order, n samples each)
            generated.append(sum(s["seqlens"]) - n * sum(prompt_tokens[k * P:(k + 1) * P]))
            others.append(s.get("others_cpu", 0.0))
    out = {name: common.summarize([p[name] for p in phases]) for name in common.PHASES + ("step",)}
    out["generated_tokens"] = common.summarize(generated)
    out["full_length"] = all(g == P * n * spec["max_tokens"] for g in generated)
    out["tokens_per_s"] = common.summarize([g / p["step"] for g, p in zip(generated, phases)])
    out["generation_tokens_per_s"] = common.summarize([g / p["generation"] for g, p in zip(generated, phases)])
    out["others_cpu"] = common.summarize(others)
    out["peak_rss_mb"] = max(r["peak_rss_mb"] for r in results)
    out["trainable_params"] = results[0].get("trainable_params")
    out["optimizer_state_bytes"] = results[0].get("optimizer_state_bytes")
    out["reward_mean"] = [[s["reward_mean"] for s in r["steps"]] for r in results]
    out["load"] = [results[0]["load_before"], results[-1]["load_after"]]
    out["wall_s"] = sum(r["wall_s"] for r in results)
    out["rounds"] = [[dict({k: v for k, v in s.items() if k != "seqlens"}, measured=k >= spec["warmup"])
                      for k, s in enumerate(r["steps"])] for r in results]
    return out


def _round_step(steps: list[dict]) -> float:
    """The median step time of one round's measured steps (its records carry ``measured``)."""
    return statistics.median(s["step_s"] for s in steps if s.get("measured", True))


def ratios(rows: dict) -> dict:
    """The comparisons of the issue (those whose configurations ran)."""
    out = {}
    med = lambda c, k="step": rows[c][k]["median"]  # noqa: E731
    if "verl-lora" in rows and "trl-lora" in rows:
        out["trl_lora_over_verl_lora"] = {k: med("trl-lora", k) / med("verl-lora", k) if med("verl-lora", k) > 0
                                          else None for k in ("step", "generation", "update")}
        out["rss_verl_lora_over_trl_lora"] = rows["verl-lora"]["peak_rss_mb"] / rows["trl-lora"]["peak_rss_mb"]
        out["step_met"] = out["trl_lora_over_verl_lora"]["step"] >= STEP_TARGET
        # each round's pair alone (adjacent processes: under the same neighbour's load, when it comes and goes)
        out["trl_lora_over_verl_lora_by_round"] = [
            _round_step(t) / _round_step(v) for v, t in zip(rows["verl-lora"].get("rounds", []),
                                                            rows["trl-lora"].get("rounds", []))]
        out["rss_met"] = rows["verl-lora"]["peak_rss_mb"] <= rows["trl-lora"]["peak_rss_mb"]
    if "verl-lora-merge" in rows and "trl-lora" in rows:
        out["trl_lora_over_verl_lora_merge"] = {k: med("trl-lora", k) / med("verl-lora-merge", k) for k in
                                                ("step", "generation", "update")}
        out["rss_verl_lora_merge_over_trl_lora"] = rows["verl-lora-merge"]["peak_rss_mb"] / rows["trl-lora"]["peak_rss_mb"]
    if "verl-lora" in rows and "verl-full" in rows:
        out["verl_full_over_verl_lora"] = {k: med("verl-full", k) / med("verl-lora", k) for k in
                                           ("step", "generation", "update")}
        out["rss_verl_full_over_verl_lora"] = rows["verl-full"]["peak_rss_mb"] / rows["verl-lora"]["peak_rss_mb"]
    if "trl-lora" in rows and "trl-full" in rows:
        out["trl_full_over_trl_lora"] = {k: med("trl-full", k) / med("trl-lora", k) for k in
                                         ("step", "generation", "update")}
    if "verl-full" in rows and "trl-full" in rows:
        out["trl_full_over_verl_full"] = {k: med("trl-full", k) / med("verl-full", k) for k in
                                          ("step", "generation", "update")}
    if "verl-lora" in rows and "verl-lora-auto" in rows:
        out["verl_lora_auto_over_fp32"] = {k: med("verl-lora-auto", k) / med("verl-lora", k) for k in
                                           ("step", "generation", "update")}
    return out


# ---- report ----------------------------------------------------------------------------------------------------

def _mmm(s: dict, fmt: str = "{:.2f}") -> str:
    return f"{fmt.format(s['median'])} ({fmt.format(s['min'])}-{fmt.format(s['max'])})"


def _rounds(w: dict) -> str:
    rounds = w.get("rounds", 1)
    return "" if rounds == 1 else f"{rounds} rounds round-robin (the measured steps of all pooled), "


def _others(row: dict) -> str:
    o = row.get("others_cpu")
    return "-" if o is None else f"{100 * o['median']:.0f} ({100 * o['min']:.0f}-{100 * o['max']:.0f})"


def _omp(env: dict) -> str:
    omp = env.get("omp") or {}
    if not omp:
        return "libgomp's defaults"
    text = ", ".join(f"{k}={v}" for k, v in omp.items())
    if omp.get("GOMP_SPINCOUNT") == "3000" and "OMP_WAIT_POLICY" not in omp:
        text += " (what `import verl` sets: threads spin briefly, so a busy neighbour slows both sides alike)"
    return text


def _met(ok: bool) -> str:
    return "MET" if ok else "NOT MET"


def report(results: dict) -> str:
    env, w = results["environment"], results["workload"]
    rows, r = results["configs"], results["ratios"]
    lines = ["# GRPO with LoRA on SmolLM2-135M-Instruct: verl-cpp vs TRL + PEFT", "",
             f"Generated by `benchmarks/lora/bench_lora_grpo.py` ({env['date']}; {env['cpu']}, {env['cores']} cores, "
             f"{env['threads']} torch threads in every configuration; load average (1/5/15 min) {env['load_start']} "
             f"at the start, {env['load_end']} at the end; torch {env['torch_version']}, trl "
             f"{env.get('trl_version', '-')}, peft {env.get('peft_version', '-')}, transformers "
             f"{env.get('transformers_version', '-')}). Total time {results['seconds']:.0f} s. "
             f"`torch.mm` 1024^3 peak in this run: fp32 {results['peaks']['float32'] / 1e9:.0f} GFLOP/s, bf16 "
             f"{results['peaks']['bfloat16'] / 1e9:.0f} GFLOP/s. OpenMP environment of every configuration's process "
             f"(TRL's as verl-cpp's): {_omp(env)}.", "",
             f"Command: `{results['command']}`", "",
             f"Workload (the same for every configuration): {w['prompts_per_step']} prompts x n = {w['n']} x "
             f"{w['max_tokens']} new tokens per step (EOS ignored on both sides: every sample is exactly "
             f"{w['max_tokens']} tokens, counted from each side's records), prompts of {w['prompt_tokens_min']}-"
             f"{w['prompt_tokens_max']} tokens (chat-rendered questions, the same ids on both sides), {w['warmup']} "
             f"warm-up + {w['steps']} measured steps per process, {_rounds(w)}micro-batches of {w['micro_batch']}, "
             f"LoRA r = {w['rank']}, "
             f"alpha = {w['alpha']} on all linears of the decoder (q/k/v/o/gate/up/down, 30 layers; lm_head is "
             f"not adapted on either side), lr {w['lora_lr']:g} (LoRA) / {w['lr']:g} (full), fp32 unless said. "
             "GRPO, temperature 1, beta = 0, clip 0.2, one update per batch, token-mean loss (TRL "
             "`loss_type=\"dapo\"`). Each configuration is its own process, run one after the other.", "",
             "Others' CPU = the share of the machine's CPU time that processes other than the measured one used "
             "during its measured steps (from /proc/stat less the process's own ticks; 50% = a neighbour kept one of "
             "2 cores busy): the contention each number was measured under.", "",
             "Phases (benchmarks/grpo_step/grpo_sides.py): generation = sampling; update = loss forward + backward + "
             "optimizer (TRL: the step minus `_generate_and_score_completions`); other = reward, advantages, "
             "batching. Neither side runs a separate old-log-prob pass (on-policy: both reuse the update's forward). "
             "Seconds, median (min-max) over the measured steps.", "",
             "| configuration | step s | generation s | update s | other s | generated tok/s (step) | "
             "peak RSS MB | trainable params | AdamW state MB | others' CPU % |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name, row in rows.items():
        opt = row.get("optimizer_state_bytes")
        params = row.get("trainable_params")
        lines.append(
            f"| {CONFIGS[name]['label']} | {_mmm(row['step'])} | {_mmm(row['generation'])} | {_mmm(row['update'])} | "
            f"{_mmm(row['other'])} | {_mmm(row['tokens_per_s'], '{:.0f}')} | {row['peak_rss_mb']:.0f} | "
            f"{'-' if params is None else f'{params / 1e6:.2f}M'} | "
            f"{'-' if opt is None else f'{opt / 2**20:.0f}'} | {_others(row)} |")
    short = [name for name, row in rows.items() if not row["full_length"]]
    lines += ["", ("Every configuration generated exactly P x n x max_tokens tokens per step." if not short else
                   f"NOT full length (EOS ended samples early, the workloads differ): {', '.join(short)}."), ""]
    lines += ["## Ratios and targets", "", "| comparison | step | generation | update | peak RSS | target | result |",
              "|---|---|---|---|---|---|---|"]

    def fmt(x):
        return "-" if x is None else f"{x:.2f}x"

    if "trl_lora_over_verl_lora" in r:
        t = r["trl_lora_over_verl_lora"]
        lines.append(f"| TRL LoRA / verl-cpp LoRA (time: higher = verl-cpp faster) | **{fmt(t['step'])}** | "
                     f"{fmt(t['generation'])} | {fmt(t['update'])} | | >= {STEP_TARGET:g}x | {_met(r['step_met'])} |")
        if len(r.get("trl_lora_over_verl_lora_by_round", [])) > 1:
            lines.append("| the same, each round's adjacent pair alone | "
                         + ", ".join(f"{x:.2f}x" for x in r["trl_lora_over_verl_lora_by_round"]) + " | | | | | |")
        lines.append(f"| peak RSS verl-cpp LoRA / TRL LoRA | | | | **{r['rss_verl_lora_over_trl_lora']:.2f}x** "
                     f"({rows['verl-lora']['peak_rss_mb']:.0f} vs {rows['trl-lora']['peak_rss_mb']:.0f} MB) | <= 1x | "
                     f"{_met(r['rss_met'])} |")
    if "trl_lora_over_verl_lora_merge" in r:
        t = r["trl_lora_over_verl_lora_merge"]
        lines.append(f"| TRL LoRA / verl-cpp LoRA with lora.merge=true | {fmt(t['step'])} | {fmt(t['generation'])} | "
                     f"{fmt(t['update'])} | {r['rss_verl_lora_merge_over_trl_lora']:.2f}x | reported | |")
    if "verl_full_over_verl_lora" in r:
        t = r["verl_full_over_verl_lora"]
        lines.append(f"| verl-cpp full FT / verl-cpp LoRA | {fmt(t['step'])} | {fmt(t['generation'])} | "
                     f"{fmt(t['update'])} | {r['rss_verl_full_over_verl_lora']:.2f}x | reported | |")
    if "trl_full_over_trl_lora" in r:
        t = r["trl_full_over_trl_lora"]
        lines.append(f"| TRL full FT / TRL LoRA | {fmt(t['step'])} | {fmt(t['generation'])} | {fmt(t['update'])} | "
                     f"| reported | |")
    if "trl_full_over_verl_full" in r:
        t = r["trl_full_over_verl_full"]
        lines.append(f"| TRL full FT / verl-cpp full FT | {fmt(t['step'])} | {fmt(t['generation'])} | "
                     f"{fmt(t['update'])} | | reported | |")
    if "verl_lora_auto_over_fp32" in r:
        t = r["verl_lora_auto_over_fp32"]
        lines.append(f"| verl-cpp LoRA default dtype (auto) / fp32 | {fmt(t['step'])} | {fmt(t['generation'])} | "
                     f"{fmt(t['update'])} | | reported | |")
    lines.append("")
    notes = observations(results) + list(results.get("notes", []))
    if notes:
        lines += ["## Observations (computed from the numbers above)", ""] + [f"- {note}" for note in notes] + [""]
    return "\n".join(lines)


def observations(results: dict) -> list[str]:
    """What the table says about contention, where verl-cpp's LoRA step goes and what sets the peak RSS, computed
    from the measurements (so a rerun keeps them true)."""
    rows, w = results["configs"], results["workload"]
    med = lambda c, k: rows[c][k]["median"]  # noqa: E731
    out = []
    others = [row["others_cpu"]["median"] for row in rows.values() if row.get("others_cpu")]
    if others and max(others) > 0.1:
        out.append(f"Measured on a shared machine: other processes used {100 * min(others):.0f}-"
                   f"{100 * max(others):.0f}% of the CPUs during the configurations' measured steps (median per "
                   "configuration; the others' CPU column). Absolute seconds do not carry over to a quiet machine; "
                   "compare configurations measured under similar others' CPU (adjacent ones, or each round's pair).")
    if "verl-lora" in rows and "verl-full" in rows:
        text = (f"verl-cpp LoRA vs its own full fine-tuning: generation {med('verl-lora', 'generation') / med('verl-full', 'generation'):.2f}x "
                "the time (the rollout runs the adapters unmerged by default: two more small GEMMs per adapted "
                "linear per token")
        if "verl-lora-merge" in rows:
            text += (f"; with lora.merge=true {med('verl-lora-merge', 'generation') / med('verl-full', 'generation'):.2f}x, "
                     f"peak RSS {rows['verl-lora-merge']['peak_rss_mb'] - rows['verl-lora']['peak_rss_mb']:+.0f} MB "
                     "for the merged copy")
        text += (f"), update {med('verl-lora', 'update') / med('verl-full', 'update'):.2f}x the time of full "
                 "fine-tuning's")
        if "trl-lora" in rows and "trl-full" in rows:
            text += (f" (TRL + PEFT: generation {med('trl-lora', 'generation') / med('trl-full', 'generation'):.2f}x, "
                     f"update {med('trl-lora', 'update') / med('trl-full', 'update'):.2f}x)")
        out.append(text + ".")
    if "verl-lora" in rows and rows["verl-lora"].get("optimizer_state_bytes"):
        tokens = w["micro_batch"] * (w["prompt_tokens_max"] + w["max_tokens"])
        logits_mb = tokens * SHAPES["vocab_size"] * 4 / 2**20
        text = (f"AdamW's state is {rows['verl-lora']['optimizer_state_bytes'] / 2**20:.0f} MB with LoRA")
        if "verl-full" in rows:
            text += (f" vs {rows['verl-full']['optimizer_state_bytes'] / 2**20:.0f} MB in full fine-tuning, yet peak RSS "
                     f"differs by {rows['verl-full']['peak_rss_mb'] - rows['verl-lora']['peak_rss_mb']:+.0f} MB only")
        out.append(text + f": the peak comes from the update's activations, a micro-batch of {w['micro_batch']} "
                   f"sequences of up to {w['prompt_tokens_max'] + w['max_tokens']} tokens through 30 layers, whose "
                   f"fp32 logits alone are {logits_mb:.0f} MB per copy ({SHAPES['vocab_size']:,}-token vocabulary); "
                   "smaller micro-batches lower it on both sides.")
    return out


def targets(results: dict) -> list[dict]:
    """The issue's targets in results_json's form (bench_all.py's roll-up table)."""
    r, w = results["ratios"], results["workload"]
    work = f"{w['prompts_per_step']}x{w['n']}x{w['max_tokens']}"
    out = []
    if "trl_lora_over_verl_lora" in r:
        out.append(results_json.target(f"GRPO step speedup vs TRL + PEFT, LoRA r={w['rank']}, SmolLM2-135M ({work})",
                                       r["trl_lora_over_verl_lora"]["step"], f">= {STEP_TARGET:g}x", r["step_met"]))
        out.append(results_json.target("peak RSS verl-cpp LoRA / TRL + PEFT LoRA, SmolLM2-135M",
                                       r["rss_verl_lora_over_trl_lora"], "<= 1x", r["rss_met"]))
    if "trl_lora_over_verl_lora_merge" in r:
        out.append(results_json.target(f"GRPO step speedup vs TRL + PEFT, LoRA with lora.merge=true ({work})",
                                       r["trl_lora_over_verl_lora_merge"]["step"], "reported", None))
    if "verl_full_over_verl_lora" in r:
        out.append(results_json.target("GRPO step time full FT / LoRA (verl-cpp, SmolLM2-135M)",
                                       r["verl_full_over_verl_lora"]["step"], "reported", None))
    return out


OMP_KEYS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")


def environment(args) -> dict:
    import verl  # noqa: F401  (first: it sets GOMP_SPINCOUNT=3000 unless a wait policy is set, see omp below)
    import torch

    m = machine()
    env = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cpu": m["cpu"], "cores": m["cores"],
           "threads": args.threads, "load_start": load_average(), "torch_version": torch.__version__,
           # the OpenMP wait policy every configuration's process inherits from this one, TRL's as verl-cpp's
           "omp": {k: os.environ[k] for k in OMP_KEYS if k in os.environ}}
    if any(CONFIGS[c]["side"] == "trl" for c in args.configs):
        for module in ("trl", "peft", "transformers"):
            env[f"{module}_version"] = package_version(args.trl_python, module)
    return env


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trl-python", default=os.path.expanduser("~/.cache/verl-cpp/trl-venv/bin/python"),
                    help="python of the TRL venv (benchmarks/grpo_step/setup_trl_venv.sh)")
    ap.add_argument("--configs", nargs="+", default=None, choices=list(CONFIGS),
                    help=f"configurations to run, in this order (default: {' '.join(DEFAULT_CONFIGS)})")
    ap.add_argument("--no-trl", action="store_true", help="leave out the TRL configurations (no TRL venv needed)")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--prompts", type=int, default=2, help="prompts per step (the grpo_step benchmark's reduced "
                    "'small' workload: 2 x 8 x 128 fits a few minutes per configuration on 2 cores)")
    ap.add_argument("--n", type=int, default=8, help="generations per prompt")
    ap.add_argument("--max-tokens", type=int, default=128, help="new tokens per sample (EOS ignored)")
    ap.add_argument("--micro-batch", type=int, default=16, help="sequences per forward/backward micro-batch")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--steps", type=int, default=3, help="measured steps per configuration (and round)")
    ap.add_argument("--rounds", type=int, default=1, help="run the configurations round-robin this many times, "
                    "each run a fresh process with its warm-up; the measured steps of all rounds are pooled (on a "
                    "shared machine, so that a neighbour's load touches every configuration alike)")
    ap.add_argument("--rank", type=int, default=32, help="LoRA rank on both sides")
    ap.add_argument("--alpha", type=int, default=64, help="LoRA alpha on both sides")
    ap.add_argument("--lr", type=float, default=1e-6, help="AdamW lr of full fine-tuning (both sides)")
    ap.add_argument("--lora-lr", type=float, default=1e-5, help="AdamW lr with LoRA (both sides)")
    ap.add_argument("--quick", action="store_true", help="smoke run: 2 prompts x 2 x 8 tokens, 1 step per "
                    "configuration (not a measurement)")
    ap.add_argument("--checkpoint", default=None, help=f"the {MODEL} checkpoint directory (default: "
                    "tools/prepare_models.py's, made on first use)")
    ap.add_argument("--workdir", default=None, help="per-configuration specs and outputs (default: a temporary dir)")
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
    command = "python " + " ".join([os.path.relpath(os.path.abspath(__file__), REPO)] +
                                   (sys.argv[1:] if argv is None else list(argv)))
    if args.configs is None:
        args.configs = list(DEFAULT_CONFIGS)
    if args.no_trl:
        args.configs = [c for c in args.configs if CONFIGS[c]["side"] != "trl"]
    if args.quick:
        args.prompts, args.n, args.max_tokens, args.warmup, args.steps = 2, 2, 8, 0, 1
    if any(CONFIGS[c]["side"] == "trl" for c in args.configs) and not os.path.exists(args.trl_python):
        ap.error(f"--trl-python {args.trl_python} does not exist (run benchmarks/grpo_step/setup_trl_venv.sh, "
                 "or pass --no-trl)")
    python = {"verl": sys.executable, "trl": args.trl_python}

    start = time.perf_counter()
    env = environment(args)
    peaks = {d: gemm_peak(d, args.threads) for d in ("float32", "bfloat16")}
    checkpoint = args.checkpoint
    if checkpoint is None:
        sys.path.insert(0, os.path.join(REPO, "tools"))
        from prepare_models import prepare

        checkpoint = prepare(MODEL)
    texts = prompt_texts(checkpoint, (args.warmup + args.steps) * args.prompts)
    prompt_tokens = check_same_prompt_ids(checkpoint, texts)
    workload = dict(prompts_per_step=args.prompts, n=args.n, max_tokens=args.max_tokens, warmup=args.warmup,
                    steps=args.steps, rounds=args.rounds, micro_batch=min(args.micro_batch, args.prompts * args.n), rank=args.rank,
                    alpha=args.alpha, lr=args.lr, lora_lr=args.lora_lr, threads=args.threads,
                    prompt_tokens_min=min(prompt_tokens), prompt_tokens_max=max(prompt_tokens))
    print(f"{MODEL} ({checkpoint}); {env['cpu']}, {args.threads} threads, load average {env['load_start']}; "
          f"torch.mm peak fp32 {peaks['float32'] / 1e9:.0f} GFLOP/s, bf16 {peaks['bfloat16'] / 1e9:.0f} GFLOP/s", flush=True)
    print(f"workload: {args.prompts} prompts x {args.n} x {args.max_tokens} tokens (prompts {min(prompt_tokens)}-"
          f"{max(prompt_tokens)} tokens), {args.warmup} warm-up + {args.steps} measured steps x {args.rounds} "
          f"round(s), micro-batch "
          f"{workload['micro_batch']}, LoRA r={args.rank} alpha={args.alpha} all-linear; configurations: "
          f"{' '.join(args.configs)}", flush=True)

    tmp = None
    workdir = args.workdir
    if workdir is None:
        tmp = tempfile.TemporaryDirectory(prefix="lora-grpo-bench-")
        workdir = tmp.name
    os.makedirs(workdir, exist_ok=True)
    specs = {config: make_spec(args, config, checkpoint, texts) for config in args.configs}
    runs: dict[str, list] = {config: [] for config in args.configs}
    for r in range(args.rounds):  # round-robin: a neighbour that comes and goes touches every configuration alike
        for config in args.configs:
            print(f"{config}: {CONFIGS[config]['label']}" + (f", round {r + 1}/{args.rounds}" if args.rounds > 1
                                                             else ""), flush=True)
            runs[config].append(run_config(config, specs[config], python[CONFIGS[config]["side"]], workdir,
                                           tag=f"{config}-r{r + 1}"))
    rows = {config: summarize_config(runs[config], specs[config], prompt_tokens) for config in args.configs}
    env["load_end"] = load_average()
    results = {"environment": env, "peaks": peaks, "workload": workload, "command": command, "configs": rows,
               "ratios": ratios(rows), "seconds": time.perf_counter() - start,
               "args": {k: v for k, v in vars(args).items()}}
    if args.quick:
        results["notes"] = ["--quick: a smoke run at a toy size, not a measurement."]
    text = report(results)
    print()
    print(text)
    if args.results_json:
        os.makedirs(os.path.dirname(os.path.abspath(args.results_json)), exist_ok=True)
        results_json.write(args.results_json, title="GRPO with LoRA on SmolLM2-135M: verl-cpp vs TRL + PEFT",
                           report=text, targets=targets(results), data=results)
    if args.results_md:
        with open(args.results_md, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
