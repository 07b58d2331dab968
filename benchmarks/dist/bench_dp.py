"""Data-parallel training on this machine (issue 18's benchmark): the same GRPO job -- same global batch, seed and
config -- as one process with one thread (the baseline) and as N ranks under torchrun with one thread each (Gloo),
in one run. Prints step time, tokens/s and the N-rank throughput over the one-process throughput (target >= 1.6x at
N = 2: each rank generates and trains on half of the rows; the gradient all-reduce and the controller's dispatch are
the cost).

The machine's speed drifts between runs (a one-process step took 1.42 to 2.15 s in five runs of one evening), so
--rounds R alternates the two jobs R times and compares the medians of all their timed steps. How far N ranks can
get at all depends on what the host runs beside this VM, so before each round's N-rank job it measures the
machine's ceiling: N concurrent one-thread GEMM processes against one (bench_env.parallel_gemm_scaling).

It also reports the re-shard after each update (the ZeRO-3 shards handed to the rollout's copy): bytes received per
rank against a full all-gather's, and its time against the step's; --tp t runs the N ranks with a tensor-parallel
rollout of size t (the 3D-HybridEngine's layout: 1/t - 1/N of the weights per rank).

    python benchmarks/dist/bench_dp.py [--ranks 2] [--tp 1] [--steps 4] [--rounds 3] [--no-forward-prefetch]
                                       [--results-json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import results_json  # noqa: E402
from bench_env import parallel_gemm_scaling  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
TOKENIZER_DIR = os.path.join(ROOT, "examples", "arith", "tokenizer")


def write_model(path: str, hidden: int, layers: int) -> str:
    import shutil

    import torch

    from verl.models import safetensors
    from verl.models.transformer import CausalLM

    with open(os.path.join(TOKENIZER_DIR, "tokenizer.json"), encoding="utf-8") as f:
        added = {t["content"]: t["id"] for t in json.load(f)["added_tokens"]}
    config = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "vocab_size": 304, "hidden_size": hidden,
              "intermediate_size": 4 * hidden, "num_hidden_layers": layers, "num_attention_heads": hidden // 32,
              "num_key_value_heads": max(1, hidden // 64), "max_position_embeddings": 256, "rms_norm_eps": 1e-6,
              "rope_theta": 10000.0, "tie_word_embeddings": True, "eos_token_id": added["<|im_end|>"],
              "pad_token_id": added["<|endoftext|>"], "torch_dtype": "float32"}
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(config, f)
    torch.manual_seed(0)
    model = CausalLM(config)
    with torch.no_grad():
        for name, p in model.state_dict().items():
            p.fill_(1.0) if name.endswith("norm.weight") else p.normal_(0.0, 0.02)
    safetensors.save_file({k: v.contiguous() for k, v in model.state_dict().items()},
                          os.path.join(path, "model.safetensors"))
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(TOKENIZER_DIR, name), os.path.join(path, name))
    return path


def write_rows(path: str, n: int) -> str:
    with open(path, "w") as f:
        for i in range(n):
            a, b = (3 * i) % 50, (7 * i + 1) % 50
            f.write(json.dumps({"data_source": "toy", "prompt": [{"role": "user", "content": f"Compute {a}+{b}."}],
                                "reward_model": {"ground_truth": str(a + b)}}) + "\n")
    return path


def overrides(args: argparse.Namespace, model: str, data: str, ranks: int, out_dir: str) -> list[str]:
    rows = args.prompts * args.n
    return [f"actor_rollout_ref.model.path={model}", "algorithm.adv_estimator=grpo", f"data.train_files={data}",
            "data.val_files=null", "data.max_prompt_length=24", f"data.max_response_length={args.response_length}",
            f"data.train_batch_size={args.prompts}", "data.shuffle=false", f"actor_rollout_ref.rollout.n={args.n}",
            f"actor_rollout_ref.actor.ppo_mini_batch_size={args.prompts}",
            f"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu={rows // ranks}",
            f"actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu={rows // ranks}",
            "actor_rollout_ref.actor.optim.lr=1e-3", "actor_rollout_ref.actor.fsdp_config.dtype=float32",
            "actor_rollout_ref.model.enable_gradient_checkpointing=false", "trainer.logger=[console]",
            "trainer.val_before_train=false", f"trainer.total_training_steps={args.warmup + args.steps}",
            "trainer.total_epochs=1000", f"trainer.default_local_dir={out_dir}/ckpt", "trainer.device=cpu",
            "trainer.save_freq=-1", f"trainer.n_gpus_per_node={ranks}",
            f"actor_rollout_ref.rollout.tensor_model_parallel_size={args.tp if ranks > 1 else 1}",
            f"actor_rollout_ref.actor.fsdp_config.forward_prefetch={str(args.forward_prefetch).lower()}"]


def run(args: argparse.Namespace, model: str, data: str, ranks: int, work: str) -> dict:
    out = os.path.join(work, f"dp{ranks}.json")
    job = [os.path.join(HERE, "dp_step_job.py"), out, str(args.warmup), *overrides(args, model, data, ranks, work)]
    cmd = [sys.executable, *job] if ranks == 1 else [
        sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={ranks}", *job]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd[:6])} ... failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    with open(out) as f:
        return json.load(f)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--tp", type=int, default=1, help="the N-rank run's rollout tensor_model_parallel_size")
    p.add_argument("--prompts", type=int, default=16)
    p.add_argument("--n", type=int, default=4)
    p.add_argument("--response-length", type=int, default=32)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--rounds", type=int, default=3, help="alternate the 1-process and the N-rank job this many times")
    p.add_argument("--no-forward-prefetch", dest="forward_prefetch", action="store_false",
                   help="fsdp_config.forward_prefetch=false (verl's default; the backward prefetches either way)")
    p.add_argument("--results-json")
    p.add_argument("--threads", type=int, default=1, help="ignored: every process runs one thread")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as work:
        model = write_model(os.path.join(work, "model"), args.hidden, args.layers)
        data = write_rows(os.path.join(work, "train.jsonl"), 4 * args.prompts)
        rounds, ceilings = [], []
        for _ in range(args.rounds):
            single = run(args, model, data, 1, work)
            ceilings.append(parallel_gemm_scaling(args.ranks))
            rounds.append((single, run(args, model, data, args.ranks, work)))

    def merged(runs: list[dict]) -> dict:  # every round's timed steps as one run's
        out = dict(runs[0])
        for key in ("step_s", "tokens", "reshard_bytes"):
            out[key] = [x for r in runs for x in r[key]]
        out["stages"] = {k: [x for r in runs for x in r["stages"].get(k, [])] for k in runs[0]["stages"]}
        return out

    one, many = merged([a for a, _ in rounds]), merged([b for _, b in rounds])

    def summary(r: dict) -> tuple[float, float]:
        step = statistics.median(r["step_s"])
        return step, statistics.median(t / s for t, s in zip(r["tokens"], r["step_s"]))

    step1, tps1 = summary(one)
    stepn, tpsn = summary(many)
    ratio = tpsn / tps1
    lines = [f"workload: GRPO, {args.prompts} prompts x n={args.n} x <= {args.response_length} new tokens per step, "
             f"Qwen2-shaped model hidden {args.hidden} x {args.layers} layers (fp32), {args.steps} timed steps after "
             f"{args.warmup} warm-up, {args.rounds} alternating rounds; one thread per process; "
             f"fsdp_config.forward_prefetch={str(args.forward_prefetch).lower()}",
             f"1 process        : step {step1:.3f} s, {tps1:,.0f} tokens/s",
             f"{args.ranks} ranks (Gloo)  : step {stepn:.3f} s, {tpsn:,.0f} tokens/s  -> {ratio:.2f}x throughput",
             "per round: " + ", ".join(f"{statistics.median(a['step_s']) / statistics.median(b['step_s']):.2f}x"
                                       for a, b in rounds) + " (step-time ratios)",
             f"the machine's ceiling, measured before each round's {args.ranks}-rank job: {args.ranks} concurrent "
             "one-thread GEMM processes did " + ", ".join(f"{c:.2f}x" for c in ceilings) + " the work of one "
             f"(median {statistics.median(ceilings):.2f}x; the {args.ranks}-rank job reached "
             f"{ratio / statistics.median(ceilings):.0%} of it)",
             "stage medians (s), 1 process vs " + f"{args.ranks} ranks:"]
    for k in sorted(one["stages"]):
        if k in many["stages"]:
            lines.append(f"  {k:28s} {statistics.median(one['stages'][k]):8.3f} "
                         f"{statistics.median(many['stages'][k]):8.3f}")
    # The re-shard after each update (ZeRO-3 shards -> the rollout's copy): bytes each rank receives, against the
    # full all-gather's (N-1)/N of the weights, and its time against the step's.
    n, whole = args.ranks, many["actor_weight_bytes"]
    reshard = statistics.median(many["reshard_bytes"])
    update_s = statistics.median(many["stages"].get("timing_s/update_weights", [0.0]))
    lines.append(f"re-shard (t = {args.tp}): {reshard / 1e6:.2f} MB received per rank = {reshard / whole:.3f} of the "
                 f"weights (full all-gather: {(n - 1) / n:.3f}; DESIGN.md: 1/t - 1/N = {1 / args.tp - 1 / n:.3f}); "
                 f"update_weights {update_s:.3f} s = {100 * update_s / stepn:.1f} % of the step")
    report = "\n".join(lines)
    print(report)
    if args.results_json:
        results_json.write(args.results_json, title=f"Data-parallel GRPO step: {args.ranks} ranks vs 1 process",
                           report=report,
                           targets=[results_json.target(f"throughput, {args.ranks} ranks / 1 process", ratio,
                                                        ">= 1.6x", ratio >= 1.6)],
                           data={"one": one, "many": many, "gemm_ceilings": ceilings})
    return 0


if __name__ == "__main__":
    sys.exit(main())
