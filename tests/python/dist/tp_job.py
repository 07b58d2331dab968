"""Tensor-parallel model and engine checks, run under torchrun by test_tensor_parallel.py: each group of T
consecutive ranks holds one tensor-parallel copy of a tiny decoder and must compute what one whole copy computes.

    torchrun --nproc_per_node=W tp_job.py OUT T

Every rank asserts; rank r writes OUT.rank<r> (what it checked) when all passed.
"""

from __future__ import annotations

import json
import sys

import torch
import torch.distributed as dist

from verl import _C

CONFIGS = {
    # Qwen2: q/k/v biases (column-parallel), tied embeddings, a vocabulary that does not split evenly (padding).
    "qwen2_tied": {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "vocab_size": 301,
                   "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
                   "num_key_value_heads": 2, "max_position_embeddings": 128, "rms_norm_eps": 1e-6,
                   "rope_theta": 10000.0, "tie_word_embeddings": True, "torch_dtype": "float32"},
    # Llama with every bias: o_proj / down_proj biases are row-parallel (added once); an untied lm_head.
    "llama_biased": {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 256,
                     "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4,
                     "num_key_value_heads": 2, "max_position_embeddings": 128, "rms_norm_eps": 1e-6,
                     "rope_theta": 10000.0, "tie_word_embeddings": False, "attention_bias": True,
                     "mlp_bias": True, "torch_dtype": "float32"},
    # Phi-3: fused qkv_proj ([q; k; v]) and gate_up_proj ([gate; up]), split segment by segment; a sliding window
    # shorter than the prompts plus their generations.
    "phi3_fused": {"architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "vocab_size": 256, "hidden_size": 32,
                   "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4,
                   "num_key_value_heads": 2, "max_position_embeddings": 128, "rms_norm_eps": 1e-5,
                   "rope_theta": 10000.0, "sliding_window": 6, "tie_word_embeddings": False,
                   "torch_dtype": "float32"},
}


def expected_shard(config: dict, name: str, whole: torch.Tensor, rank: int, size: int) -> torch.Tensor:
    """Megatron's layout, written out independently of the C++ one."""
    if ".qkv_proj." in name or ".gate_up_proj." in name:
        # A fused projection: the rank's q, k and v heads (gate and up rows), each part split on its own.
        head_dim = config["hidden_size"] // config["num_attention_heads"]
        q, kv = config["num_attention_heads"] * head_dim, config["num_key_value_heads"] * head_dim
        parts = whole.split([q, kv, kv] if ".qkv_proj." in name else [config["intermediate_size"]] * 2)
        return torch.cat([part.chunk(size, 0)[rank] for part in parts])
    if name in ("model.embed_tokens.weight", "lm_head.weight"):
        rows = -(-whole.shape[0] // size)
        out = torch.zeros(rows, whole.shape[1], dtype=whole.dtype)
        piece = whole[rank * rows:(rank + 1) * rows]
        out[:piece.shape[0]] = piece
        return out
    if any(f".{p}." in name for p in ("q_proj", "k_proj", "v_proj", "gate_proj", "up_proj")):
        return whole.chunk(size, 0)[rank]
    if any(f".{p}." in name for p in ("o_proj", "down_proj")):
        if name.endswith(".bias"):
            return whole if rank == 0 else torch.zeros_like(whole)
        return whole.chunk(size, 1)[rank]
    return whole


def main() -> None:
    out, t = sys.argv[1], int(sys.argv[2])
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    world, rank = dist.get_world_size(), dist.get_rank()
    groups = [dist.new_group(list(range(first, first + t))) for first in range(0, world, t)]
    tp = _C.dist.Communicator(groups[rank // t], device="cpu", timeout_s=120)
    assert tp.world_size == t and tp.rank == rank % t
    checked = {}
    for label, config in CONFIGS.items():
        whole = _C.model.CausalLM(json.dumps(config))
        _C.model.init_weights(whole, seed=7)
        sharded = _C.model.CausalLM(json.dumps(config), tensor_parallel=tp)
        assert sharded.tensor_parallel_size == t
        sharded.load_state_dict(whole.state_dict())
        # Each rank holds exactly its slice of every tensor.
        full_state = whole.state_dict()
        for name, shard in sharded.state_dict().items():
            assert torch.equal(shard, expected_shard(config, name, full_state[name], rank % t, t)), (label, name)

        gen = torch.Generator().manual_seed(1)
        ids = torch.randint(0, config["vocab_size"], (3, 9), generator=gen)
        mask = torch.ones(3, 9, dtype=torch.long)
        mask[1, :3] = 0  # left padding
        with torch.no_grad():
            for got, want in ((sharded.forward(ids, mask), whole.forward(ids, mask)),
                              (sharded.forward_packed(ids.view(-1), torch.tensor([0, 5, 27])),
                               whole.forward_packed(ids.view(-1), torch.tensor([0, 5, 27])))):
                assert got.shape == want.shape, (label, got.shape, want.shape)
                torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
            try:
                with torch.enable_grad():
                    sharded.forward(ids, mask)
                raise AssertionError("a tensor-parallel forward with grad mode on must fail")
            except ValueError as e:
                assert "inference only" in str(e), e

        prompts = [torch.randint(0, config["vocab_size"], (n,), generator=gen).tolist() for n in (3, 11, 6, 1, 8)]
        for mode, params in (("greedy", _C.rollout.SamplingParams(temperature=0.0, max_tokens=12, ignore_eos=True)),
                             ("sampled", _C.rollout.SamplingParams(n=2, temperature=1.0, top_p=0.9, top_k=50,
                                                                   max_tokens=12, ignore_eos=True))):
            results = []
            for model in (whole, sharded):
                engine = _C.rollout.Engine(model, max_model_len=64, seed=11, block_size=4, max_num_seqs=4)
                results.append(engine.generate(prompts, [params]))
            for one, many in zip(*results):
                for a, b in zip(one.outputs, many.outputs):
                    assert a.token_ids == b.token_ids, (label, mode, a.token_ids, b.token_ids)
                    torch.testing.assert_close(torch.tensor(b.logprobs), torch.tensor(a.logprobs), rtol=1e-5,
                                               atol=1e-5)
            checked[f"{label}/{mode}"] = sum(len(o.token_ids) for r in results[1] for o in r.outputs)
    with open(f"{out}.rank{rank}", "w") as f:
        json.dump(checked, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
