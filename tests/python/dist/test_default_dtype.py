"""Distributed runs with the dtype as shipped (issue 40 item 1). ``fsdp_config.dtype: auto`` resolves to bfloat16 on
a CPU with bf16 matrix units and to float32 on one without; ZeRO-3 then gathers bf16 weights, and on torch 2.14 every
torchrun with the defaults died in the PPOTrainer constructor on the first kind ("collective all_gather failed ...
Invalid scalar type": bf16 was sent as int16 bits, which Gloo refuses) while the distributed tests, all pinned to
float32, passed on both. Here the collectives take every dtype over a real Gloo group, and GRPO runs with no dtype
set under torchrun, with a tensor-parallel rollout and through the one-command launch, with ``auto`` forced both ways
(VERL_CPU_BF16), so the outcome does not depend on the CPU that CI lands on."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from collective_dtypes_job import DTYPES, rank_values
from test_data_parallel import HERE, STEPS, job_files, overrides, run_cli  # noqa: F401 -- job_files: a fixture

pytestmark = pytest.mark.dist

# The keys the other distributed tests pin to float32; here they keep their shipped value, auto.
DTYPE_KEYS = ("actor_rollout_ref.actor.fsdp_config.dtype=", "actor_rollout_ref.ref.fsdp_config.dtype=",
              "critic.fsdp.dtype=")


def torchrun(script: str, world: int, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={world}",
                           os.path.join(HERE, script), *args], env=dict(os.environ, OMP_NUM_THREADS="1", **(env or {})),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return proc


def test_every_collective_takes_every_dtype_over_gloo(tmp_path):
    world = 2
    out = str(tmp_path / "collectives")
    torchrun("collective_dtypes_job.py", world, out)
    results = [torch.load(f"{out}.rank{r}", weights_only=False) for r in range(world)]
    for dtype in DTYPES:
        name = str(dtype).removeprefix("torch.")
        inputs = [rank_values(r, 6, dtype) for r in range(world)]
        wide = torch.float64 if dtype.is_floating_point else torch.int64
        total = sum(t.to(wide) for t in inputs).to(dtype)
        for r in range(world):
            expected = {"all_gather_flat": torch.cat(inputs), "reduce_scatter_sum": total.chunk(world)[r],
                        "all_reduce_sum_": total.view(2, 3), "broadcast_": inputs[0].view(2, 3)}
            for op, want in expected.items():
                got = results[r][(name, op)]
                assert isinstance(got, torch.Tensor), (name, op, got)
                assert got.dtype == dtype and got.shape == want.shape, (name, op, got.dtype, got.shape)
                # bit for bit: the bytes of the result are the expected bytes
                assert torch.equal(got.view(-1).view(torch.uint8), want.reshape(-1).view(torch.uint8)), (name, op)


def run_default_dtype_job(files, world: int, cpu_bf16: str, *extra: str) -> tuple[list[dict], str]:
    """dp_job.py's GRPO run at `world` ranks with no dtype set, `auto` resolved as on a CPU with (1) or without (0)
    bf16 units; every rank's result and the launch's output."""
    out = os.path.join(files["dir"], f"default-dtype-{world}-{cpu_bf16}-{abs(hash(extra))}.pt")
    args = [o for o in overrides(files, "grpo", world, out + ".d") if not o.startswith(DTYPE_KEYS)]
    proc = torchrun("dp_job.py", world, out, *args, *extra, env={"VERL_CPU_BF16": cpu_bf16})
    return [torch.load(f"{out}.rank{r}", weights_only=False) for r in range(world)], proc.stdout + proc.stderr


def check_trained(ranks: list[dict], world: int, compute_bytes: int) -> None:
    """Every step finished on every rank with finite numbers, and the rollout's copy was gathered from the ZeRO-3
    shards in the compute dtype (`compute_bytes` per weight: 2 for bf16, 4 for float32)."""
    controller = ranks[0]
    assert controller["world_size"] == world and len(controller["metrics"]) == STEPS
    for step in controller["metrics"]:
        for key in ("actor/pg_loss", "actor/grad_norm", "actor/entropy", "critic/score/mean"):
            assert torch.isfinite(torch.tensor(step[key])), (key, step[key])
        assert step["actor/grad_norm"] > 0
        held = controller["weight_bytes"]["actor"]  # fp32 master shard
        assert step["perf/reshard_bytes_per_rank"] == (world - 1) * held * compute_bytes // 4, step
    for other in ranks[1:]:
        assert other["metrics"] == controller["metrics"]


AUTO_NOTE = "fsdp_config.dtype=auto computes in float32 on this CPU"


@pytest.mark.parametrize("cpu_bf16, compute_bytes", [("1", 2), ("0", 4)], ids=["auto=bf16", "auto=fp32"])
def test_torchrun_with_the_default_dtype(job_files, cpu_bf16, compute_bytes):
    ranks, output = run_default_dtype_job(job_files, 2, cpu_bf16)
    check_trained(ranks, 2, compute_bytes)
    assert (AUTO_NOTE in output) == (cpu_bf16 == "0")


def test_tensor_parallel_rollout_with_the_default_dtype(job_files):
    ranks, _ = run_default_dtype_job(job_files, 2, "1", "actor_rollout_ref.rollout.tensor_model_parallel_size=2")
    controller = ranks[0]
    assert len(controller["metrics"]) == STEPS
    assert all(torch.isfinite(torch.tensor(m["actor/pg_loss"])) for m in controller["metrics"])


def test_one_command_launch_with_the_default_dtype(job_files, monkeypatch):
    monkeypatch.setenv("VERL_CPU_BF16", "1")
    out = os.path.join(job_files["dir"], "cli-default-dtype")
    args = [o for o in overrides(job_files, "grpo", 2, out) if not o.startswith(DTYPE_KEYS)]
    run_cli(args + ["trainer.total_training_steps=2", "trainer.save_freq=2",
                    "custom_reward_function.path=" + os.path.join(HERE, "dp_job.py"),
                    "custom_reward_function.name=compute_score"], cwd=job_files["dir"])
    assert os.path.isdir(os.path.join(out, "ckpt", "global_step_2", "actor"))


def test_a_bad_forced_resolution_is_a_config_error(job_files, tmp_path):
    proc = subprocess.run([sys.executable, os.path.join(HERE, "dp_job.py"), str(tmp_path / "bad"),
                           *[o for o in overrides(job_files, "grpo", 1, str(tmp_path)) if not o.startswith(DTYPE_KEYS)]],
                          env=dict(os.environ, VERL_CPU_BF16="yes"), capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    assert "ConfigError" in proc.stderr and "VERL_CPU_BF16 = 'yes'" in proc.stderr, proc.stderr[-3000:]
