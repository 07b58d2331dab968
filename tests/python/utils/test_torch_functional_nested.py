"""verl.utils.torch_functional's expand_as_nested and its distributed statistics, with values worked out by hand;
the statistics over two gloo ranks on the CPU (verl.utils.device names gloo there)."""

import os

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from verl.utils import torch_functional as F
from verl.utils.device import get_device_name, get_nccl_backend


def test_expand_as_nested_repeats_each_row_value_along_its_row():
    nested = torch.nested.as_nested_tensor([torch.zeros(1), torch.zeros(4), torch.zeros(2)], layout=torch.jagged)
    out = F.expand_as_nested(torch.tensor([0.5, -1.0, 7.0]), nested)
    assert out.is_nested
    assert out.offsets().tolist() == [0, 1, 5, 7]
    assert out.values().tolist() == [0.5, -1.0, -1.0, -1.0, -1.0, 7.0, 7.0]
    assert [row.tolist() for row in out.unbind()] == [[0.5], [-1.0] * 4, [7.0, 7.0]]


def test_expand_as_nested_refuses_what_verl_refuses():
    nested = torch.nested.as_nested_tensor([torch.zeros(2), torch.zeros(3)], layout=torch.jagged)
    with pytest.raises(AssertionError, match="must be nested"):
        F.expand_as_nested(torch.tensor([1, 2]), torch.zeros(2, 3))
    with pytest.raises(AssertionError, match="batch shape"):
        F.expand_as_nested(torch.tensor([1, 2, 3]), nested)
    with pytest.raises(AssertionError, match="ndim of tensor"):
        F.expand_as_nested(torch.tensor([[1], [2]]), nested)
    with pytest.raises(AssertionError, match="ndim of nested_tensor"):
        F.expand_as_nested(torch.tensor([1, 2]), nested.unsqueeze(-1))


def test_device_helpers_on_this_machine():
    assert get_device_name() == ("cuda" if torch.cuda.is_available() else "cpu")
    assert get_nccl_backend() == ("nccl" if torch.cuda.is_available() else "gloo")


def _two_ranks(rank: int, world_size: int, init_file: str, out_dir: str) -> None:
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world_size)
    try:
        # rank 0 holds [1, 2, 3], rank 1 holds [10]: mean 4, max 10, min 1, and the squared deviations
        # 9 + 4 + 1 + 36 = 50 over n - 1 = 3 give the sample std sqrt(50 / 3).
        local = torch.tensor([1.0, 2.0, 3.0]) if rank == 0 else torch.tensor([10.0])
        mean, high, low, std = F.distributed_mean_max_min_std(local)
        only_mean = F.distributed_mean_max_min_std(local, compute_max=False, compute_min=False, compute_std=False)
        # masked: rank 0 keeps 1 and 3 of [1, 2, 3], rank 1 keeps 20 of [10, 20]: (1 + 3 + 20) / 3
        values = torch.tensor([1.0, 2.0, 3.0]) if rank == 0 else torch.tensor([10.0, 20.0])
        mask = torch.tensor([1.0, 0.0, 1.0]) if rank == 0 else torch.tensor([0.0, 1.0])
        masked = F.distributed_masked_mean(values, mask)
        torch.save({"stats": [mean, high, low, std], "only_mean": only_mean, "masked": masked},
                   os.path.join(out_dir, f"rank{rank}.pt"))
    finally:
        dist.destroy_process_group()


@pytest.mark.dist
def test_distributed_statistics_over_two_gloo_ranks(tmp_path):
    mp.spawn(_two_ranks, args=(2, str(tmp_path / "rendezvous"), str(tmp_path)), nprocs=2, join=True)
    for rank in range(2):
        got = torch.load(tmp_path / f"rank{rank}.pt")
        mean, high, low, std = (t.item() for t in got["stats"])
        assert (mean, high, low) == (4.0, 10.0, 1.0)
        assert std == pytest.approx((50.0 / 3.0) ** 0.5)
        assert got["only_mean"][0].item() == 4.0 and got["only_mean"][1:] == (None, None, None)
        assert got["masked"].item() == pytest.approx((1.0 + 3.0 + 20.0) / 3.0)
