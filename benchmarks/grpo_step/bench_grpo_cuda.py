"""A GRPO step on a GPU (issue 17): verl-cpp's PPOTrainer in verl's default mixed precision (fp32 master weights,
bf16 compute) against a plain PyTorch loop on the same tokens, in one process.

verl-cpp side: ``PPOTrainer.step`` on P prompts x n samples x up to R new tokens (grpo_sides.run_verl: the toy
reward, one mini-batch, gradient checkpointing, lr 1e-6), on a random-init model with Qwen2.5-0.5B's shapes;
reported per phase (generation, update) with MFU against the GPU's measured bf16 torch.mm peak, and
``training/rollout_probs_diff_max`` (rollout vs trainer log-probs). With one mini-batch the update's own forward gives
the old log-probs (actor.old_log_prob_from_update, the default), so a second run with the old-log-prob pass
(old_log_prob_from_update=false, verl's recomputation) times that pass against the baseline's.

``--sharded`` runs the default verl-cpp step once more as a one-rank job under torchrun (``--nproc_per_node=1``: NCCL
on CUDA, Gloo on a CPU; issue 44: ZeRO-3 at N = 1 within 3 % of the one-process path) and reports its step and
phases against the one-process run, and whether the actor was sharded (the step's ``perf/reshard_bytes_per_rank``,
which only a sharded actor reports: verl-cpp keeps a world of one unsharded, MixedPrecision::shard_over).

Baseline: transformers' Qwen2 (sdpa) from the same checkpoint, fp32 parameters + bf16 autocast, gradient
checkpointing, torch's fused AdamW -- the loop a PyTorch user writes -- on sequences of the same lengths as the
last verl-cpp step's (right-padded to the longest in each micro-batch): the update (forward + token log-probs +
policy-gradient loss + backward per micro-batch, clip, optimizer step) and a no-grad pass for the token log-probs
and entropies (what verl's old-log-prob pass computes: the entropy is its actor/entropy metric).

    python benchmarks/grpo_step/bench_grpo_cuda.py --device cuda           # the issue's workload (H100: ~2 min)
    python benchmarks/grpo_step/bench_grpo_cuda.py --device cpu --quick    # smoke run of the script
    python benchmarks/grpo_step/bench_grpo_cuda.py --device cpu --quick --model tiny --sharded   # smaller, + torchrun
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import grpo_common as common  # noqa: E402
from bench_env import gemm_peak, timed  # noqa: E402
from grpo_sides import run_verl  # noqa: E402

# issue 17, on an H100, 0.5B shapes, 32 x 8 x 256: the step and the update / log-prob pass against plain PyTorch
TARGETS = dict(step_s=2.5, update_ratio=1.1, log_prob_ratio=1.1)


def plain_pytorch(checkpoint: str, seqlens: list[int], vocab: int, micro: int, lr: float, device: str,
                  repeats: int) -> dict:
    """Seconds of the baseline's update and log-prob pass on rows of `seqlens` tokens (the median of `repeats`
    after one warm-up each)."""
    import torch
    import transformers

    model = transformers.AutoModelForCausalLM.from_pretrained(checkpoint, dtype=torch.float32,
                                                              attn_implementation="sdpa").to(device)
    model.gradient_checkpointing_enable()
    model.config.use_cache = False
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0, fused=True)
    g = torch.Generator().manual_seed(0)
    rows = []
    for n in seqlens:
        rows.append(torch.randint(0, vocab, (n,), generator=g))
    advantages = torch.randn(len(rows), generator=g)

    def micro_batches():
        for start in range(0, len(rows), micro):
            chunk = rows[start:start + micro]
            width = max(len(r) for r in chunk)
            ids = torch.zeros((len(chunk), width), dtype=torch.long)
            mask = torch.zeros_like(ids)
            for i, r in enumerate(chunk):
                ids[i, :len(r)] = r
                mask[i, :len(r)] = 1
            yield ids.to(device), mask.to(device), advantages[start:start + micro].to(device)

    def token_log_probs(ids, mask, entropy=False):
        with torch.autocast(torch.device(device).type, dtype=torch.bfloat16):
            logits = model(input_ids=ids, attention_mask=mask).logits[:, :-1]
        log_p = torch.log_softmax(logits.float(), -1)
        lp = log_p.gather(-1, ids[:, 1:, None])[..., 0]
        if not entropy:
            return lp
        p_log_p = log_p.exp().mul_(log_p)  # one (rows, vocab) temporary
        return lp, -p_log_p.sum(-1)

    def update():
        model.train()
        total = sum(len(r) - 1 for r in rows)
        for ids, mask, adv in micro_batches():
            lp = token_log_probs(ids, mask)
            m = mask[:, 1:].float()
            loss = -(lp * adv[:, None] * m).sum() / total
            loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)

    def log_prob_pass():
        model.eval()
        with torch.no_grad():
            for ids, mask, _ in micro_batches():
                token_log_probs(ids, mask, entropy=True)

    def median_seconds(fn):
        fn()  # warm-up
        return statistics.median(timed(fn, device)[1] for _ in range(repeats))

    cuda = torch.device(device).type == "cuda"
    result = dict(update_s=median_seconds(update), log_prob_s=median_seconds(log_prob_pass),
                  peak_mem_gib=torch.cuda.max_memory_allocated(device) / 2**30 if cuda else float("nan"))
    del model, opt
    return result


def run_sharded_worker(spec_path: str, out_path: str) -> None:
    """One rank of the --sharded side (under torchrun): grpo_sides.run_verl on the parent's spec, plus what tells a
    sharded actor from an unsharded one -- the metric only a sharded actor's step reports, and the process group."""
    import torch.distributed as dist

    from verl import PPOTrainer

    with open(spec_path) as f:
        spec = json.load(f)
    sharded_steps = []
    step = PPOTrainer.step

    def recording_step(self, batch):
        metrics = step(self, batch)
        sharded_steps.append("perf/reshard_bytes_per_rank" in metrics)
        return metrics

    PPOTrainer.step = recording_step
    result = run_verl(spec)
    result.update(sharded=any(sharded_steps), world_size=int(os.environ.get("WORLD_SIZE", "1")),
                  process_group=dist.get_backend() if dist.is_available() and dist.is_initialized() else None)
    if int(os.environ.get("RANK", "0")) == 0:
        with open(out_path, "w") as f:
            json.dump(result, f)


def run_sharded(spec: dict, workdir: str, timeout_s: float | None = None) -> dict:
    """The default verl-cpp step as a one-rank torchrun job (this script's --sharded-worker): its result dict."""
    spec_path, out_path = os.path.join(workdir, "sharded_spec.json"), os.path.join(workdir, "sharded_out.json")
    with open(spec_path, "w") as f:
        json.dump(spec, f)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=1",
           os.path.abspath(__file__), "--sharded-worker", spec_path, out_path]
    print(f"[sharded] {' '.join(cmd)}", file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True, timeout=timeout_s)
    with open(out_path) as f:
        return json.load(f)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--model", default="qwen0.5b", choices=list(common.MODELS))
    ap.add_argument("--prompts", type=int, default=32)
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--prompt-tokens", type=int, default=64, help="about this many prompt tokens (+-25%%)")
    ap.add_argument("--micro-batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=1e-6)
    ap.add_argument("--dtype", default="bfloat16", help="fsdp_config.dtype (compute); master weights stay fp32")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--baseline-repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="4 prompts x 4 x 32 tokens, one measured step")
    ap.add_argument("--sharded", action="store_true",
                    help="also run the default step as a one-rank torchrun job (NCCL on CUDA, Gloo on a CPU) and "
                         "compare it with the one-process run (issue 44: ZeRO-3 at N = 1 within 3 %%)")
    ap.add_argument("--sharded-worker", nargs=2, metavar=("SPEC", "OUT"), help=argparse.SUPPRESS)
    ap.add_argument("--results-json", default=None)
    args = ap.parse_args()
    if args.sharded_worker:
        run_sharded_worker(*args.sharded_worker)
        return
    if args.quick:
        args.prompts, args.n, args.max_tokens, args.micro_batch, args.steps, args.baseline_repeats = 4, 4, 32, 8, 1, 1
    import torch

    cuda = args.device.startswith("cuda")
    if not cuda and not args.quick:
        ap.error("the measurement is a GPU one (--device cuda[:i]); on a CPU only --quick runs, as a smoke test")
    peak = gemm_peak("bfloat16", 1, 8192 if cuda else 1024, args.device)
    tmp = tempfile.TemporaryDirectory()
    checkpoint = os.path.join(tmp.name, args.model)
    common.write_checkpoint(checkpoint, args.model, seed=0)
    total_steps = args.warmup + args.steps
    spec = dict(threads=1, model=args.model, checkpoint=checkpoint, seed=0, lr=args.lr, n=args.n,
                prompts_per_step=args.prompts, max_tokens=args.max_tokens, micro_batch=args.micro_batch,
                warmup=args.warmup, steps=args.steps, compute_dtypes=[args.dtype], device=args.device,
                gradient_checkpointing=True,
                prompts=common.make_prompt_texts(total_steps * args.prompts, args.prompt_tokens, seed=1))
    def release() -> None:  # the last trainer's memory, before the next side allocates its own
        gc.collect()
        if cuda:
            torch.cuda.empty_cache()

    verl = run_verl(spec)
    measured = verl["steps"][args.warmup:]
    release()
    sharded = run_sharded(spec, tmp.name) if args.sharded else None
    with_pass = run_verl(dict(spec, old_log_prob_from_update=False))["steps"][args.warmup:]
    release()
    seqlens = measured[-1]["seqlens"]
    base = plain_pytorch(checkpoint, seqlens, common.MODELS[args.model]["vocab_size"], args.micro_batch, args.lr,
                         args.device, args.baseline_repeats)

    med = {k: statistics.median(s[k] for s in measured) for k in ("step_s", "generation_s", "log_prob_s", "update_s")}
    med_pass = {k: statistics.median(s[k] for s in with_pass) for k in ("step_s", "log_prob_s", "update_s")}
    train_flops = statistics.median(common.verl_flops(args.model, s["seqlens"]) for s in measured)
    infer_flops = statistics.median(common.verl_flops(args.model, s["seqlens"], forward_only=True) for s in measured)
    generated = statistics.median(sum(s["seqlens"]) for s in measured)
    diff = max(s["rollout_probs_diff_max"] for s in measured)
    lines = [
        f"device={args.device} ({torch.cuda.get_device_name(args.device) if cuda else 'CPU'}), torch "
        f"{torch.__version__}; bf16 torch.mm peak {peak / 1e12:.1f} TFLOP/s",
        f"workload: {args.model}, {args.prompts} prompts x {args.n} x up to {args.max_tokens} new tokens, micro-batch "
        f"{args.micro_batch}, gradient checkpointing, lr {args.lr:g}; verl-cpp compute dtype {args.dtype} over fp32 "
        f"master weights; medians of {args.steps} steps after {args.warmup} warm-up",
        f"verl-cpp step {med['step_s']:.2f}s: generation {med['generation_s']:.2f}s, old log-prob "
        f"{med['log_prob_s']:.2f}s (from the update), update {med['update_s']:.2f}s, other "
        f"{med['step_s'] - med['generation_s'] - med['log_prob_s'] - med['update_s']:.2f}s; "
        f"tokens per step {generated:.0f}",
        f"verl-cpp with the old-log-prob pass (old_log_prob_from_update=false): step {med_pass['step_s']:.2f}s, "
        f"old log-prob {med_pass['log_prob_s']:.2f}s, update {med_pass['update_s']:.2f}s",
        f"plain PyTorch (fp32 params + bf16 autocast, fused AdamW) on the same lengths: update {base['update_s']:.2f}s, "
        f"log-prob pass {base['log_prob_s']:.2f}s (peak memory {base['peak_mem_gib']:.1f} GiB)",
        f"ratios verl-cpp / plain: update {med['update_s'] / base['update_s']:.2f}x, log-prob pass "
        f"{med_pass['log_prob_s'] / base['log_prob_s']:.2f}x",
        f"MFU vs bf16 peak: verl-cpp update {100 * train_flops / med['update_s'] / peak:.1f}%, plain "
        f"{100 * train_flops / base['update_s'] / peak:.1f}%; log-prob pass "
        f"{100 * infer_flops / med_pass['log_prob_s'] / peak:.1f}% vs {100 * infer_flops / base['log_prob_s'] / peak:.1f}%",
        f"training/rollout_probs_diff_max (rollout vs recomputed log-probs): {diff:.3g}",
    ]
    summary = dict(step_s=med["step_s"], generation_s=med["generation_s"], update_s=med["update_s"],
                   log_prob_pass_s=med_pass["log_prob_s"], step_with_pass_s=med_pass["step_s"],
                   baseline_update_s=base["update_s"], baseline_log_prob_s=base["log_prob_s"],
                   update_ratio=med["update_s"] / base["update_s"],
                   log_prob_ratio=med_pass["log_prob_s"] / base["log_prob_s"], rollout_probs_diff_max=diff)
    if sharded is not None:
        steps = sharded["steps"][args.warmup:]
        med_sharded = {k: statistics.median(s[k] for s in steps) for k in ("step_s", "generation_s", "update_s")}
        ratio = med_sharded["step_s"] / med["step_s"]
        summary.update(sharded_step_s=med_sharded["step_s"], sharded_ratio=ratio, sharded=sharded["sharded"],
                       sharded_backend=sharded["process_group"])
        actor = "sharded (ZeRO-3)" if sharded["sharded"] else "NOT sharded (verl-cpp trains a world of one unsharded)"
        lines.append(
            f"one-rank torchrun job (world size {sharded['world_size']}, process group "
            f"{sharded['process_group'] or 'none'}): step {med_sharded['step_s']:.2f}s (generation "
            f"{med_sharded['generation_s']:.2f}s, update {med_sharded['update_s']:.2f}s) = {ratio:.3f}x the "
            f"one-process step; actor {actor}")
    print("\n".join(lines), flush=True)
    if args.results_json:
        with open(args.results_json, "w") as f:
            json.dump(dict(args=vars(args), peak=peak, verl=verl, verl_with_pass=with_pass, baseline=base,
                           sharded=sharded, summary=summary, report=lines, targets=TARGETS), f)


if __name__ == "__main__":
    main()
