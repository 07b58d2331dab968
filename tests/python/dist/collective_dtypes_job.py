"""Every tensor collective of verl's Communicator on every dtype, over a real Gloo group (run under torchrun by
test_default_dtype.py). Each rank saves what each collective returned, or the error it raised, to OUT.rankR."""

from __future__ import annotations

import os
import sys

import torch
import torch.distributed as dist

from verl import _C

DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.float8_e4m3fn, torch.int8, torch.uint8,
          torch.int16, torch.uint16, torch.int32, torch.uint32, torch.int64, torch.bool]


def rank_values(rank: int, numel: int, dtype: torch.dtype) -> torch.Tensor:
    """Small integers (so every sum is exact in every dtype), different on every rank and element."""
    values = (torch.arange(numel) * 3 + rank * 5) % 7
    return (values % 2 == 1).to(dtype) if dtype == torch.bool else values.to(dtype)


def main() -> None:
    out = sys.argv[1]
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    comm = _C.dist.Communicator(dist.group.WORLD, device="cpu", timeout_s=60)
    results = {}
    for dtype in DTYPES:
        name = str(dtype).removeprefix("torch.")
        mine = rank_values(rank, 6, dtype)
        for op in ("all_gather_flat", "reduce_scatter_sum", "all_reduce_sum_", "broadcast_"):
            try:
                if op == "all_gather_flat":
                    got = comm.all_gather_flat(mine)
                elif op == "reduce_scatter_sum":
                    got = comm.reduce_scatter_sum(mine)
                else:
                    got = mine.clone().view(2, 3)  # in place, and not flat
                    getattr(comm, op)(got)
                results[(name, op)] = got
            except Exception as e:  # noqa: BLE001 -- recorded: the test names what failed
                results[(name, op)] = f"{type(e).__name__}: {e}"
    torch.save(results, f"{out}.rank{rank}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
