"""verl's one-step off-policy trainer over a rollout pool of its own ranks (issue 19 item 4 across processes): with
``rollout.n_gpus_per_node`` = R the last R ranks of the job generate batch N+1 while the trainer's ranks train on
batch N, the controller sending the pool the weights once per step. The seeds of a row do not depend on the rank that
samples it, so a pooled run -- one trainer rank and one rollout rank, or two ZeRO-3 trainer ranks and a tensor-parallel
pool of two -- takes the steps the one-process run (the rollout a thread of it) takes: same metrics, same weights."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

import verl
from verl.errors import ConfigError
from verl.trainer import distributed

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "trainer"))
from trainer_helpers import toy_overrides, write_rows, write_tiny_model  # noqa: E402

pytestmark = pytest.mark.dist

STEPS = 3
SAME_METRICS = ["critic/score/mean", "critic/advantages/mean", "response_length/mean", "actor/entropy",
                "actor/pg_loss", "actor/grad_norm", "training/rollout_probs_diff_max",
                "rollout_corr/rollout_is_mean"]


@pytest.fixture(scope="module")
def job_files(tmp_path_factory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("one_step_pool")
    return {"model": write_tiny_model(str(d / "model")), "train": write_rows(str(d / "train.jsonl"), 16),
            "val": write_rows(str(d / "val.jsonl"), 4), "dir": str(d)}


def one_step_overrides(files: dict[str, str], trainers: int, pool: int, out: str) -> list[str]:
    return [*toy_overrides(files["model"], out, estimator="grpo", steps=STEPS),
            f"data.train_files={files['train']}", f"data.val_files={files['val']}", "trainer.test_freq=2",
            "actor_rollout_ref.hybrid_engine=False", "actor_rollout_ref.rollout.free_cache_engine=False",
            # decoupled: the old log-probs recomputed, the staleness corrected by token-level importance weights
            "algorithm.rollout_correction.bypass_mode=False", "algorithm.rollout_correction.rollout_is=token",
            "+rollout.nnodes=1", f"+rollout.n_gpus_per_node={pool}",
            # one mini-batch per step: every trainer rank sees the rows one process sees (see test_data_parallel)
            "actor_rollout_ref.actor.ppo_mini_batch_size=4", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2",
            f"trainer.n_gpus_per_node={trainers}", "actor_rollout_ref.nccl_timeout=120",
            "actor_rollout_ref.actor.optim.lr=1e-3"]


def run_job(files: dict[str, str], trainers: int, pool: int, *extra: str,
            by_hand: bool = False) -> tuple[list[dict], list[dict]]:
    """The toy one-step job with `trainers` trainer ranks and a pool of `pool`: the controller's steps (logged by
    fit(), or returned by optimize() with `by_hand`) and every rank's saved result."""
    tag = f"{trainers}-{pool}{'-' + str(abs(hash(extra))) if extra else ''}{'-by-hand' if by_hand else ''}"
    out, logs = os.path.join(files["dir"], f"{tag}.pt"), os.path.join(files["dir"], f"logs-{tag}")
    args = [os.path.join(HERE, "one_step_job.py"), out, *one_step_overrides(files, trainers, pool, out + ".d"), *extra]
    env = dict(os.environ, OMP_NUM_THREADS="1", VERL_FILE_LOGGER_ROOT=logs)
    if by_hand:
        env["VERL_ONE_STEP_JOB_BY_HAND"] = "1"
    world = trainers + pool
    cmd = [sys.executable, *args] if world == 1 else [
        sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={world}", *args]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-6000:]
    if by_hand:
        with open(f"{out}.metrics.json") as f:
            steps = json.load(f)
    else:
        with open(os.path.join(logs, "proj", "exp.jsonl")) as f:
            steps = [r for r in (json.loads(line)["data"] for line in f) if "training/global_step" in r]
    return steps, [torch.load(f"{out}.rank{r}", weights_only=False) for r in range(world)]


def assert_same_steps(single: list[dict], pooled: list[dict]) -> None:
    assert [s["training/global_step"] for s in pooled] == list(range(1, STEPS + 1))
    for step, (one, many) in enumerate(zip(single, pooled)):
        for key in SAME_METRICS + sorted(k for k in one if k.startswith("val-core/")):
            if key in one:
                assert many[key] == pytest.approx(one[key], rel=1e-5, abs=1e-6), (step, key, one[key], many[key])
            else:
                assert key not in many, (step, key)
    # the pool got the weights before every batch but the first, whose generation overlapped nothing
    assert ["timing_s/sync_rollout_weights" in s for s in pooled] == [True, True, False]
    assert any(k.startswith("val-core/") for k in pooled[1])  # the validation after step 2 generated on the pool


@pytest.fixture(scope="module")
def single_run(job_files) -> tuple[list[dict], dict]:
    """The one-process run: the rollout a thread of the trainer's process."""
    steps, (single,) = run_job(job_files, 1, 0)
    assert steps[1]["training/rollout_probs_diff_max"] > 1e-4  # one step stale from the second batch on
    return steps, single


@pytest.mark.parametrize("trainers,pool,extra", [
    (1, 1, ()),
    (1, 2, ()),  # the rows split over two pool ranks (row i still samples with seed + i)
    # verl's agent loops on each pool rank's share of the rows (single_turn_agent: the engine's tokens, bit for bit)
    (1, 2, ("actor_rollout_ref.rollout.multi_turn.enable=true",)),
    # HSDP trainers (fsdp_size 1 of 2: replicas) beside a pool
    (2, 1, ("actor_rollout_ref.actor.fsdp_config.fsdp_size=1",)),
    # ZeRO-3 trainers (fsdp_size naming the trainer's ranks: the pool's shard nothing), one TP replica
    (2, 2, ("actor_rollout_ref.rollout.tensor_model_parallel_size=2", "actor_rollout_ref.actor.fsdp_config.fsdp_size=2")),
])
def test_rollout_pool_takes_the_steps_of_one_process(job_files, single_run, trainers, pool, extra):
    single_steps, single = single_run
    steps, ranks = run_job(job_files, trainers, pool, *extra)
    assert_same_steps(single_steps, steps)
    if "actor_rollout_ref.rollout.multi_turn.enable=true" in extra:
        assert all(s["num_turns/mean"] == 2 for s in steps)  # the loops ran: a user turn and an assistant turn
    assert [r["pool_rank"] for r in ranks] == [False] * trainers + [True] * pool
    assert [r["controller"] for r in ranks] == [True] + [False] * (trainers + pool - 1)
    tensor_parallel = "actor_rollout_ref.rollout.tensor_model_parallel_size=2" in extra
    for r in ranks[trainers:]:
        assert "the rollout pool, which trains nothing" in r["weight_bytes"]
        # a tensor-parallel pool rank keeps its shard only; otherwise the actor module is the rollout's copy
        assert r["whole_actor"] is not tensor_parallel
    for name, weight in single["state"].items():
        torch.testing.assert_close(ranks[0]["state"][name], weight, rtol=1e-5, atol=1e-5, msg=name)
        for r, other in enumerate(ranks[1:], start=1):
            assert torch.equal(other["state"][name], ranks[0]["state"][name]), (r, name)


def test_the_loop_by_hand_at_the_top_level(job_files, single_run):
    """submit_rollouts / wait_rollouts / optimize called at the script's top level on every rank (each call releases
    the workers, so a submitted batch is generated before submit_rollouts returns) take fit()'s training steps."""
    single_steps, single = single_run
    steps, ranks = run_job(job_files, 1, 1, by_hand=True)
    assert [s["training/global_step"] for s in steps] == list(range(1, STEPS + 1))
    for step, (one, many) in enumerate(zip(single_steps, steps)):
        for key in SAME_METRICS:
            assert many[key] == pytest.approx(one[key], rel=1e-5, abs=1e-6), (step, key, one[key], many[key])
    for name, weight in single["state"].items():
        torch.testing.assert_close(ranks[1]["state"][name], weight, rtol=1e-5, atol=1e-5, msg=name)


def test_resume_sends_the_pool_the_restored_weights(job_files):
    """A pooled job resumed from its step-2 checkpoint: the trainer's ranks load it, and the pool -- which loads
    nothing -- generates the resumed step's batch from the restored weights (the trainer's recomputation agrees with
    the rollout's log-probs), not from the model it started with."""
    steps, _ = run_job(job_files, 1, 1, "trainer.save_freq=2")
    assert steps[2]["training/rollout_probs_diff_max"] > 1e-4  # uninterrupted, batch 3 was one step stale
    saved = os.path.join(job_files["dir"], "1-1-" + str(abs(hash(("trainer.save_freq=2",)))) + ".pt.d", "ckpt",
                         "global_step_2")
    assert os.path.isdir(saved), saved
    resumed, _ = run_job(job_files, 1, 1, "trainer.resume_mode=resume_path", f"trainer.resume_from_path={saved}")
    assert [s["training/global_step"] for s in resumed] == [3]
    assert resumed[0]["training/rollout_probs_diff_max"] < 1e-5


def test_a_killed_pool_rank_ends_the_job(job_files):
    """kill -9 of the rollout pool's rank while the job trains: the job ends (non-zero) well within a minute and the
    report names the lost rank -- never a silent hang."""
    import signal
    import time

    out = os.path.join(job_files["dir"], "killed.pt")
    args = [os.path.join(HERE, "one_step_job.py"), out, *one_step_overrides(job_files, 1, 1, out + ".d"),
            "actor_rollout_ref.nccl_timeout=60", "trainer.total_training_steps=1000", "trainer.total_epochs=1000"]
    env = dict(os.environ, OMP_NUM_THREADS="1", VERL_ONE_STEP_JOB_PIDFILE=out + ".pid",
               VERL_ONE_STEP_JOB_SCORED=out + ".scored", VERL_FILE_LOGGER_ROOT=out + ".logs")
    proc = subprocess.Popen([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
                             *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 300
        while not (os.path.exists(out + ".scored") and os.path.exists(out + ".pid.rank1")):  # training is under way
            assert proc.poll() is None, proc.stdout.read()[-4000:]
            assert time.monotonic() < deadline, "the job never scored a batch"
            time.sleep(0.2)
        with open(out + ".pid.rank1") as f:
            os.kill(int(f.read()), signal.SIGKILL)
        killed_at = time.monotonic()
        output, _ = proc.communicate(timeout=120)
        elapsed = time.monotonic() - killed_at
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0
    assert elapsed < 60, elapsed
    assert "local_rank: 1" in output and "Signal 9" in output, output[-4000:]


def test_pool_layouts_that_do_not_fit_are_refused_before_any_process_group():
    def config(*overrides: str):
        return verl.load_config(overrides=["actor_rollout_ref.hybrid_engine=False", "+rollout.nnodes=1", *overrides])

    with pytest.raises(ConfigError, match=r"rollout.n_gpus_per_node \(2\) = 3 ranks, but this job was launched as a "
                                          r"world of 2 ranks"):
        distributed.device_mesh(config("+rollout.n_gpus_per_node=2"), "cpu", distributed.LaunchEnv(2, 0, 0))
    with pytest.raises(ConfigError, match=r"tensor_model_parallel_size = 2 does not divide the rollout pool's 3 ranks"):
        distributed.device_mesh(config("+rollout.n_gpus_per_node=3",
                                        "actor_rollout_ref.rollout.tensor_model_parallel_size=2"),
                                 "cpu", distributed.LaunchEnv(4, 0, 0))
    with pytest.raises(ConfigError, match=r"fsdp_size = 2 does not divide the job's 3 ranks"):
        distributed.device_mesh(config("+rollout.n_gpus_per_node=1", "trainer.n_gpus_per_node=3",
                                        "actor_rollout_ref.actor.fsdp_config.fsdp_size=2"),
                                 "cpu", distributed.LaunchEnv(4, 0, 0))
    import torch.distributed as dist
    assert not dist.is_initialized()


def test_one_command_starts_the_trainer_and_the_pool(job_files, tmp_path):
    """verl's one-step command line without torchrun: trainer.n_gpus_per_node + rollout.n_gpus_per_node local ranks
    (torch's elastic launcher), the reward from verl's custom_reward_function."""
    scorer = tmp_path / "score.py"
    scorer.write_text("def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n"
                      "    return (len(solution_str) % 5) / 4.0\n")
    args = [a for a in one_step_overrides(job_files, 1, 1, str(tmp_path)) if not a.startswith("+rollout.")]
    env = {k: v for k, v in os.environ.items() if k not in ("WORLD_SIZE", "RANK", "LOCAL_RANK")}
    env["VERL_FILE_LOGGER_ROOT"] = str(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "verl.experimental.one_step_off_policy.main_ppo", *args,
                           "rollout.n_gpus_per_node=1", f"custom_reward_function.path={scorer}",
                           "custom_reward_function.name=compute_score"],
                          env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-6000:]
    with open(tmp_path / "proj" / "exp.jsonl") as f:
        steps = [row for row in map(json.loads, f) if "training/global_step" in row["data"]]
    assert [s["data"]["training/global_step"] for s in steps] == list(range(1, STEPS + 1))
    assert "timing_s/sync_rollout_weights" in steps[1]["data"]


def test_rollout_pool_with_lora_takes_the_steps_of_one_process(job_files):
    """LoRA over a pool (issue 42): the controller sends the adapters with the weights, each pool rank generates with
    them unmerged, and the pooled run takes the one-process LoRA run's steps."""
    lora = ("actor_rollout_ref.model.lora_rank=8", "actor_rollout_ref.actor.optim.lr=0.05")
    single_steps, (single,) = run_job(job_files, 1, 0, *lora)
    steps, ranks = run_job(job_files, 1, 1, *lora)
    assert_same_steps(single_steps, steps)
    assert any(".lora_B." in name for name in single["state"])
    for name, weight in single["state"].items():
        torch.testing.assert_close(ranks[0]["state"][name], weight, rtol=1e-5, atol=1e-5, msg=name)
        assert torch.equal(ranks[1]["state"][name], ranks[0]["state"][name]), name
