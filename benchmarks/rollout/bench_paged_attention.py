"""Decode attention on a GPU: verl::paged_attention's CUDA kernels against gather + SDPA and the copy bandwidth.

One decode step's attention of one layer with Qwen2.5-0.5B's heads (14 query / 2 KV heads, head_dim 64, bf16):
`rows` sequences of about `ctx` cached tokens each, in 16-token blocks scattered over the pool, as the rollout
engine lays them out. Sides, each timed over --reps calls with CUDA events after warm-up:

- the warp kernel (what the engine runs: pools aligned to 16 bytes);
- the GQA kernel (the fallback for other head sizes: the same pools viewed 4 bytes off their 16-byte alignment);
- gather + SDPA, the named baseline: each row's blocks gathered into one context, torch's
  scaled_dot_product_attention under a length mask (what the engine did before it had kernels).

Printed: microseconds per call, the KV bytes read per second against a device-to-device copy's measured rate, and
the kernels' largest difference from the baseline's output.

    python benchmarks/rollout/bench_paged_attention.py            # needs a CUDA device
"""

from __future__ import annotations

import argparse


def make_inputs(rows: int, ctx: int, heads: int, kv_heads: int, d: int, block: int, offset: int, seed: int):
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    max_blocks = (ctx + 32) // block + 1
    blocks = rows * max_blocks + 1
    n = blocks * block * kv_heads * d
    # `offset` elements before the pools' data: 0 keeps them 16-byte aligned, 2 leaves them 4-byte aligned.
    k_buf = torch.randn(n + offset, device="cuda", generator=g).to(torch.bfloat16)
    v_buf = torch.randn(n + offset, device="cuda", generator=g).to(torch.bfloat16)
    k_pool = k_buf.narrow(0, offset, n).view(blocks, block, kv_heads, d)
    v_pool = v_buf.narrow(0, offset, n).view(blocks, block, kv_heads, d)
    tables = (torch.randperm(blocks - 1, device="cuda", generator=g) + 1)[: rows * max_blocks].view(rows, max_blocks)
    positions = torch.randint(ctx - 16, ctx + 16, (rows, 1), device="cuda", generator=g)
    q = torch.randn(rows, 1, heads, d, device="cuda", generator=g).to(torch.bfloat16).transpose(1, 2)
    return q, k_pool, v_pool, tables, positions


def gather_sdpa(q, k_pool, v_pool, tables, positions, scale):
    import torch

    rows, heads, _, d = q.shape
    block, kv_heads = k_pool.shape[1], k_pool.shape[2]
    k = k_pool[tables].reshape(rows, -1, kv_heads, d).transpose(1, 2)  # (rows, kv_heads, ctx, d)
    v = v_pool[tables].reshape(rows, -1, kv_heads, d).transpose(1, 2)
    keys = torch.arange(k.shape[2], device=q.device)
    mask = (keys.view(1, 1, 1, -1) <= positions.view(rows, 1, 1, 1))
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale, enable_gqa=True)


def per_call_us(fn, reps: int) -> float:
    import torch

    for _ in range(3):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / reps * 1e3


def copy_bandwidth() -> float:
    """Bytes read and written per second by a 2 GiB device-to-device copy."""
    import torch

    src = torch.empty(1 << 30, dtype=torch.int16, device="cuda")
    dst = torch.empty_like(src)
    us = per_call_us(lambda: dst.copy_(src), 10)
    return 2 * src.numel() * src.element_size() / (us * 1e-6)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, nargs="+", default=[512, 256])
    ap.add_argument("--ctx", type=int, nargs="+", default=[100, 300, 1000])
    ap.add_argument("--reps", type=int, default=50)
    args = ap.parse_args()
    import torch

    import verl  # noqa: F401  (registers torch.ops.verl)

    if not torch.cuda.is_available():
        ap.error("needs a CUDA device")
    heads, kv_heads, d, block = 14, 2, 64, 16
    scale = d ** -0.5
    bandwidth = copy_bandwidth()
    print(f"{torch.cuda.get_device_name()}: device-to-device copy {bandwidth / 1e9:.0f} GB/s; heads {heads}/{kv_heads}, "
          f"head_dim {d}, bf16, block {block}")
    for rows in args.rows:
        for ctx in args.ctx:
            aligned = make_inputs(rows, ctx, heads, kv_heads, d, block, offset=0, seed=rows + ctx)
            offset = make_inputs(rows, ctx, heads, kv_heads, d, block, offset=2, seed=rows + ctx)
            offset[1].copy_(aligned[1])
            offset[2].copy_(aligned[2])
            offset = (aligned[0], offset[1], offset[2], aligned[3], aligned[4])
            reference = gather_sdpa(*aligned, scale)
            sides = {"warp kernel": aligned, "GQA kernel": offset}
            kv_bytes = sum(int(p) + 1 for p in aligned[4].flatten().tolist()) * kv_heads * d * 2 * 2
            base_us = per_call_us(lambda: gather_sdpa(*aligned, scale), args.reps)
            parts = []
            for name, inputs in sides.items():
                out = torch.ops.verl.paged_attention(*inputs, scale)
                us = per_call_us(lambda: torch.ops.verl.paged_attention(*inputs, scale), args.reps)
                diff = (out.float() - reference.float()).abs().max().item()
                parts.append(f"{name} {us:6.1f} us ({kv_bytes / us / 1e3:5.0f} GB/s, "
                             f"{100 * kv_bytes / us / 1e3 / (bandwidth / 1e9):3.0f}% of copy; {base_us / us:4.1f}x "
                             f"gather+SDPA; max|diff| {diff:.2g})")
            print(f"rows {rows} ctx ~{ctx}: gather+SDPA {base_us:7.1f} us | " + " | ".join(parts), flush=True)


if __name__ == "__main__":
    main()
