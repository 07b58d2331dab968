"""Tensor-parallel generation (issue 18 item 4): rollout.tensor_model_parallel_size = t splits each rollout replica over
t ranks in Megatron's layout (Phi-3's fused projections segment by segment). A tensor-parallel model computes what
the whole model computes (logits to 1e-5), the engine on it gives exactly the tokens of the engine on the whole model
(greedy and seeded sampling), and a GRPO run with t = 2 equals the one-process run. Layouts that do not fit are
ConfigErrors before any process group."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import verl
from verl.errors import ConfigError
from verl.trainer import distributed

sys.path.insert(0, os.path.dirname(__file__))
from test_data_parallel import assert_same_run, job_files, run_job  # noqa: E402,F401  (job_files: a fixture)

pytestmark = pytest.mark.dist

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.mark.parametrize("world,t", [(2, 2), (4, 2)])
def test_tensor_parallel_model_and_engine_equal_one_copy(tmp_path, world, t):
    out = str(tmp_path / "tp")
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={world}",
                           os.path.join(HERE, "tp_job.py"), out, str(t)], env=env, capture_output=True, text=True,
                          timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-6000:]
    for r in range(world):
        with open(f"{out}.rank{r}") as f:
            checked = json.load(f)
        assert set(checked) == {f"{m}/{s}" for m in ("qwen2_tied", "llama_biased", "phi3_fused")
                                for s in ("greedy", "sampled")}
        assert all(n >= 5 * 12 for n in checked.values()), checked  # every prompt generated its 12 tokens


def test_grpo_with_tensor_parallel_rollout_equals_one_process(job_files):
    """4 ranks = 2 rollout replicas of 2 ranks each (training stays ZeRO-3 over the 4, its shards laid out so that
    each rank's tensor-parallel shard comes from the one other rank with its TP rank); 2 ranks = one replica (each
    rank's shard is its TP slice already: only the norms move)."""
    single = run_job(job_files, "grpo", 1)[0]
    for world in (4, 2):
        ranks = run_job(job_files, "grpo", world, "actor_rollout_ref.rollout.tensor_model_parallel_size=2")
        assert_same_run(single, ranks, tp=2)


def test_layouts_that_do_not_fit_are_refused_before_any_process_group():
    config = verl.load_config(overrides=["actor_rollout_ref.rollout.tensor_model_parallel_size=3",
                                         "trainer.n_gpus_per_node=2"])
    with pytest.raises(ConfigError, match=r"tensor_model_parallel_size = 3 does not divide the job's 2 ranks"):
        distributed.device_mesh(config, "cpu", distributed.LaunchEnv(2, 0, 0))
    one = verl.load_config(overrides=["actor_rollout_ref.rollout.tensor_model_parallel_size=2"])
    with pytest.raises(ConfigError, match=r"does not divide the job's 1 ranks"):
        distributed.device_mesh(one, "cpu", distributed.LaunchEnv(1, 0, 0))
    import torch.distributed as dist
    assert not dist.is_initialized()


def test_main_ppo_refuses_a_tensor_parallel_size_that_does_not_divide(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "verl.trainer.main_ppo", "trainer.n_gpus_per_node=2",
                           "actor_rollout_ref.rollout.tensor_model_parallel_size=4"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={k: v for k, v in os.environ.items() if k not in ("WORLD_SIZE", "RANK", "LOCAL_RANK")})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "tensor_model_parallel_size = 4 does not divide the job's 2 ranks" in proc.stderr
