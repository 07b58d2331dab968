"""Generation with LoRA adapters unmerged (what verl-cpp's rollout runs: the trainer's expression, so the rollout's
log-probs are the trainer's) against the same adapters merged into the weights (what a hand-over that folds them in
would give), and against the base model without adapters -- in one run, on SmolLM2-135M's shapes (random weights;
30 layers, hidden 576, 9 / 3 heads, MLP 1536, vocab 49152). Prints tokens/s and the ratios.

    python benchmarks/lora/bench_lora_rollout.py [--prompts 16] [--samples 4] [--tokens 64] [--rank 32] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import torch

from verl.models.transformer import CausalLM, init_weights
from verl.rollout import LLM, SamplingParams

SMOLLM2_135M = dict(architectures=["LlamaForCausalLM"], model_type="llama", vocab_size=49152, hidden_size=576,
                    intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3,
                    max_position_embeddings=2048, rms_norm_eps=1e-5, rope_theta=100000.0, tie_word_embeddings=True,
                    torch_dtype="float32")


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def tokens_per_second(model: CausalLM, prompts: list[list[int]], args) -> float:
    llm = LLM(model, max_num_seqs=256, eos_token_id=[], seed=0)
    params = SamplingParams(n=args.samples, temperature=1.0, max_tokens=args.tokens, ignore_eos=True)
    llm.generate(prompt_token_ids=prompts[:2], sampling_params=SamplingParams(max_tokens=4, ignore_eos=True))
    best = float("inf")
    for _ in range(args.runs):
        start = time.perf_counter()
        outs = llm.generate(prompt_token_ids=prompts, sampling_params=params)
        best = min(best, time.perf_counter() - start)
    assert sum(len(c.token_ids) for o in outs for c in o.outputs) == len(prompts) * args.samples * args.tokens
    return len(prompts) * args.samples * args.tokens / best


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--prompts", type=int, default=16)
    p.add_argument("--samples", type=int, default=4)
    p.add_argument("--tokens", type=int, default=64)
    p.add_argument("--prompt-len", type=int, default=32)
    p.add_argument("--rank", type=int, default=32)
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    torch.manual_seed(0)

    base = init_weights(CausalLM(SMOLLM2_135M), seed=0)
    adapted = init_weights(CausalLM(SMOLLM2_135M), seed=0)
    adapted.add_adapters(args.rank, 2 * args.rank, target_modules="all-linear")
    with torch.no_grad():  # trained-looking adapters (B is zero after add_adapters)
        g = torch.Generator().manual_seed(1)
        for name, t in sorted(adapted.adapter_state_dict().items()):
            if "lora_B" in name:
                t.copy_(0.01 * torch.randn(t.shape, generator=g))
    start = time.perf_counter()
    merged_state = adapted.merged_state_dict()
    merge_s = time.perf_counter() - start
    merged = CausalLM(SMOLLM2_135M)
    merged.load_state_dict(merged_state)

    prompts = [torch.randint(0, 49152, (args.prompt_len,), generator=torch.Generator().manual_seed(i)).tolist()
               for i in range(args.prompts)]
    result = {"cpu": cpu_name(), "threads": torch.get_num_threads(), "rank": args.rank,
              "shape": f"{args.prompts} prompts x {args.samples} samples x {args.tokens} tokens"}
    for name, model in (("base", base), ("unmerged", adapted), ("merged", merged)):
        result[f"{name}_tokens_per_s"] = round(tokens_per_second(model, prompts, args), 1)
    result["unmerged_over_merged"] = round(result["unmerged_tokens_per_s"] / result["merged_tokens_per_s"], 3)
    result["merge_seconds"] = round(merge_s, 3)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
