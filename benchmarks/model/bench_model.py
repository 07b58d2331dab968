"""verl-cpp's tokenizer and model forward vs. Hugging Face, side by side in one process run.

1. Tokenizer throughput: verl's C++ byte-level BPE vs. HF `tokenizers` on the same corpus, both
   single-threaded (RAYON_NUM_THREADS=1 for HF, one call per text), with a check that the ids agree.
   Target >= 1x.
2. Forward tokens/s: verl-cpp's CausalLM vs. transformers' Qwen2ForCausalLM with the same weights,
   dtype and torch threads, a 4-layer, 512-hidden model at batch 8 x 512 under torch.inference_mode.
   Target >= 1.2x. Logits parity is printed too.

Prints a table of ratios and MET / NOT MET; --results-md writes it to a file.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
import time

os.environ.setdefault("RAYON_NUM_THREADS", "1")  # HF tokenizers: single thread, as ours

import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import results_json  # noqa: E402  (benchmarks/results_json.py)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
QWEN3_DIR = os.path.join(REPO, "tests", "fixtures", "qwen3-tokenizer")
ARITH_TOKENIZER = os.path.join(REPO, "examples", "arith", "tokenizer")


def corpus(n_texts: int, seed: int = 0) -> list[str]:
    """Varied text: English prose, code, Chinese, digits, whitespace runs, emoji."""
    rng = random.Random(seed)
    words = ("reinforcement learning policy gradient advantage estimator the of and to in is that for "
             "with model token batch sequence reward value critic actor").split()
    pieces = ["def f(x):\n    return x ** 2\n", "强化学习是一种机器学习方法。", "12345678901234", "    \n\t  ",
              "🙂🚀 emoji", "SELECT * FROM t WHERE id = 42;", "Ünïcödé façade"]
    texts = []
    for _ in range(n_texts):
        parts = [" ".join(rng.choice(words) for _ in range(rng.randint(20, 80)))]
        parts += rng.sample(pieces, 3)
        rng.shuffle(parts)
        texts.append(" ".join(parts))
    return texts


def median_time(fn, repeats: int, warmup: int = 1) -> tuple[float, float, float]:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times), max(times)


def bench_tokenizer(tokenizer_dir: str, texts: list[str], repeats: int) -> dict:
    import tokenizers

    import verl

    ours = verl.load_tokenizer(tokenizer_dir)
    ref = tokenizers.Tokenizer.from_file(os.path.join(tokenizer_dir, "tokenizer.json"))
    mismatches = sum(ours.encode(t) != ref.encode(t).ids for t in texts)
    n_bytes = sum(len(t.encode()) for t in texts)
    t_ours = median_time(lambda: [ours.encode(t) for t in texts], repeats)
    t_ref = median_time(lambda: [ref.encode(t) for t in texts], repeats)
    return {"name": f"tokenizer encode ({os.path.basename(os.path.normpath(tokenizer_dir))})",
            "unit": "MB/s", "ours": n_bytes / t_ours[0] / 1e6, "ref": n_bytes / t_ref[0] / 1e6,
            "speedup": t_ref[0] / t_ours[0], "target": 1.0, "spread": (t_ours, t_ref),
            "parity": f"{mismatches} of {len(texts)} texts differ"}


def bench_forward(batch: int, seq: int, dtype: torch.dtype, repeats: int) -> dict:
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from verl.models.transformer import CausalLM

    config = dict(model_type="qwen2", vocab_size=32000, hidden_size=512, intermediate_size=1408,
                  num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=2048,
                  rms_norm_eps=1e-6, rope_theta=10000.0, tie_word_embeddings=False)
    torch.manual_seed(0)
    hf = Qwen2ForCausalLM(Qwen2Config(**config, attn_implementation="sdpa")).eval()
    ours = CausalLM(config)
    ours.load_state_dict(hf.state_dict())
    ours.to(dtype=dtype)
    # As from_pretrained(dtype=...) builds it: weights in `dtype`, the RoPE inv_freq buffer kept in
    # float32 (hf.to(bfloat16) would round it too, and the angles of late positions drift by up to
    # position * 2^-9 rad -- the 2.5e-2 bf16 logits "difference" earlier runs of this script showed).
    inv_freq = hf.model.rotary_emb.inv_freq.clone()
    hf.to(dtype)
    hf.model.rotary_emb.inv_freq = inv_freq
    ids = torch.randint(0, config["vocab_size"], (batch, seq))
    with torch.inference_mode():
        diff = (ours.forward(ids).float() - hf(input_ids=ids).logits.float()).abs().max().item()
        t_ours = median_time(lambda: ours.forward(ids), repeats)
        t_ref = median_time(lambda: hf(input_ids=ids), repeats)
    tokens = batch * seq
    return {"name": f"forward 4L x 512h, {batch} x {seq}, {str(dtype).replace('torch.', '')}", "unit": "tok/s",
            "ours": tokens / t_ours[0], "ref": tokens / t_ref[0], "speedup": t_ref[0] / t_ours[0], "target": 1.2,
            "spread": (t_ours, t_ref), "parity": f"max |logits diff| {diff:.2e}"}


def report(rows: list[dict], threads: int) -> str:
    lines = [f"date: {time.strftime('%Y-%m-%dT%H:%M:%S%z')}",
             f"machine: {os.cpu_count()} cores ({platform.processor() or platform.machine()}), "
             f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
             f"torch {torch.__version__}, torch threads {threads}; HF tokenizers single-threaded", "",
             f"{'benchmark':44} {'verl-cpp':>14} {'HF':>14} {'speedup':>8} {'target':>7}  result",
             "-" * 100]
    for r in rows:
        met = "MET" if r["speedup"] >= r["target"] else "NOT MET"
        lines.append(f"{r['name']:44} {r['ours']:>9.1f} {r['unit']:<4} {r['ref']:>9.1f} {r['unit']:<4} "
                     f"{r['speedup']:>7.2f}x {r['target']:>6.1f}x  {met}")
    lines += ["", "min .. max seconds per timed call (verl-cpp | HF), and parity:"]
    for r in rows:
        (o, _, o_max), (h, _, h_max) = r["spread"]
        lines.append(f"  {r['name']:44} {r['spread'][0][1]:.4f} .. {o_max:.4f} | {r['spread'][1][1]:.4f} .. "
                     f"{h_max:.4f}   {r['parity']}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--texts", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=512)
    parser.add_argument("--results-md", default=None)
    parser.add_argument("--results-json", default=None, help="report and targets as JSON (benchmarks/results_json.py)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    texts = corpus(args.texts)
    rows = []
    for tokenizer_dir in (QWEN3_DIR, ARITH_TOKENIZER):
        if os.path.isfile(os.path.join(tokenizer_dir, "tokenizer.json")):
            rows.append(bench_tokenizer(tokenizer_dir, texts, args.repeats))
    for dtype in (torch.float32, torch.bfloat16):
        rows.append(bench_forward(args.batch, args.seq, dtype, args.repeats))
    text = report(rows, args.threads)
    print(text)
    if args.results_md:
        with open(args.results_md, "w", encoding="utf-8") as f:
            f.write("# model: verl-cpp tokenizer and forward vs. Hugging Face\n\n"
                    "Written by `make bench-model` (benchmarks/model/bench_model.py). Why the forward is at parity\n"
                    "(GEMM-bound on both sides) and the bf16 logits finding: benchmarks/model/PROFILE.md.\n\n"
                    f"Command: `python {' '.join(sys.argv)}`\n\n```\n{text}\n```\n")
    if args.results_json:
        targets = [results_json.target(f"{r['name']} speedup vs HF", r["speedup"], f">= {r['target']:g}x",
                                       r["speedup"] >= r["target"], detail=r["parity"]) for r in rows]
        results_json.write(args.results_json, title="model: verl-cpp tokenizer and forward vs. Hugging Face",
                           report=text, targets=targets, data={"rows": rows})


if __name__ == "__main__":
    main()
