"""Data-parallel training under torchrun (issue 18): N ranks over Gloo take the same steps as one process on the
same global batch -- same metrics, same final weights (fp32) -- each rank holding 1/N of the weights and of the AdamW
state (ZeRO-3), and a layout that does not fit the launch is a ConfigError before any process group forms."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys

import pytest
import torch

import verl
from verl.trainer import distributed

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "trainer"))
from trainer_helpers import toy_overrides, write_rows, write_tiny_model  # noqa: E402

pytestmark = pytest.mark.dist

STEPS = 3
# Metrics that one process and N ranks compute from the same rows (per-micro-batch means such as pg_clipfrac depend
# on how the rows are cut, as in verl, and are not compared).
SAME_METRICS = ["critic/score/mean", "critic/advantages/mean", "critic/returns/mean", "response_length/mean",
                "actor/entropy", "actor/pg_loss", "actor/kl_loss", "actor/grad_norm", "actor/lr",
                "critic/vf_loss", "critic/grad_norm", "critic/values/mean"]


@pytest.fixture(scope="module")
def job_files(tmp_path_factory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("dp")
    return {"model": write_tiny_model(str(d / "model")), "train": write_rows(str(d / "train.jsonl"), 16),
            "dir": str(d)}


def overrides(files: dict[str, str], estimator: str, world: int, out: str) -> list[str]:
    o = toy_overrides(files["model"], out, estimator=estimator, steps=STEPS)
    o += [f"data.train_files={files['train']}", "data.val_files=null",
          # one mini-batch per step: N ranks then see the same mini-batch as one process (with several, each rank
          # cuts its own rows into mini-batches, as verl does)
          "actor_rollout_ref.actor.ppo_mini_batch_size=4", "critic.ppo_mini_batch_size=4",
          "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2", "critic.ppo_micro_batch_size_per_gpu=2",
          "actor_rollout_ref.actor.use_kl_loss=true", "actor_rollout_ref.actor.kl_loss_coef=0.01",
          f"trainer.n_gpus_per_node={world}", "actor_rollout_ref.nccl_timeout=120",
          # N ranks sum each gradient in another order than one process (fp32 rounding, ~1e-7 relative). AdamW
          # divides by sqrt(v): where a gradient element is near zero that rounding moves the update by up to ~lr,
          # so the weights agree to ~lr x 1e-2 after 3 steps -- 6e-5 at the toy config's lr=1e-2, well inside 1e-5 at
          # 1e-3 (RL runs use ~1e-6).
          "actor_rollout_ref.actor.optim.lr=1e-3", "critic.optim.lr=1e-3"]
    return o


def run_job(files: dict[str, str], estimator: str, world: int, *extra: str, save: bool = False) -> list[dict]:
    """The toy job at `world` ranks (`extra`: more overrides; `save`: a checkpoint at the end); every rank's saved
    result."""
    tag = f"-{abs(hash(extra))}" if extra else ""
    out = os.path.join(files["dir"], f"{estimator}-{world}{tag}{'-saved' if save else ''}.pt")
    args = [os.path.join(HERE, "dp_job.py"), out, *overrides(files, estimator, world, out + ".d"), *extra]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    if save:
        env["VERL_DP_JOB_SAVE"] = "1"
    if world == 1:
        cmd = [sys.executable, *args]
    else:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={world}", *args]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return [torch.load(f"{out}.rank{r}", weights_only=False) for r in range(world)]


def assert_same_run(single: dict, ranks: list[dict], tp: int = 1, fsdp: dict[str, int] | None = None) -> None:
    """`fsdp`: each role's fsdp_size when not all ranks (HSDP)."""
    controller = ranks[0]
    assert controller["world_size"] == len(ranks)
    assert len(controller["metrics"]) == STEPS
    for step, (one, many) in enumerate(zip(single["metrics"], controller["metrics"])):
        for key in SAME_METRICS:
            if key not in one:
                continue
            assert many[key] == pytest.approx(one[key], rel=1e-5, abs=1e-6), (step, key, one[key], many[key])
    assert controller["metrics"][-1]["critic/advantages/max"] > 0  # the run did learn something
    for name, weight in single["state"].items():
        torch.testing.assert_close(controller["state"][name], weight, rtol=1e-5, atol=1e-5, msg=name)
    for r, other in enumerate(ranks[1:], start=1):
        assert other["metrics"] == controller["metrics"], f"rank {r} returned other metrics"
        for name, weight in controller["state"].items():
            assert torch.equal(other["state"][name], weight), f"rank {r} gathered other weights for {name}"
    # ZeRO-3: each rank holds ceil(numel_u / N) fp32 master weights of every unit u (a decoder layer, or the root:
    # embedding, final norm, head) and their AdamW moments (exp_avg, exp_avg_sq) -- 1/N of one process's figure, up
    # to N - 1 padding elements per unit.
    fsdp = fsdp or {}
    for role, single_bytes in single["optimizer_bytes"].items():
        n = fsdp.get(role, len(ranks))
        names = [name for name in single["state"] if name.startswith(role + ".")]
        numel = sum(single["state"][name].numel() for name in names)
        units = 1 + len({name.split(".")[3] for name in names if name.startswith(role + ".model.layers.")})
        assert single_bytes == 2 * 4 * numel
        assert single["weight_bytes"][role] == 4 * numel
        for r, other in enumerate(ranks):
            held = other["weight_bytes"][role]
            assert 4 * numel / n <= held <= 4 * (numel / n + units), (role, r, held, numel, units)
            assert other["optimizer_bytes"][role] == 2 * held, (role, r, other["optimizer_bytes"])
    # The rollout's copy is gathered from the actor's shards after every update (float32 compute here): with t = 1
    # each rank receives the other N - 1 ranks' shards; with a tensor-parallel rollout (the 3D-HybridEngine) about
    # (1/t - 1/N) of the weights, DESIGN.md section 8's figure, plus each unit's padding and the norms' chunks.
    n = fsdp.get("actor", len(ranks))
    if len(ranks) > 1:
        whole = 4 * sum(w.numel() for name, w in single["state"].items() if name.startswith("actor."))
        for step in controller["metrics"]:
            got = step["perf/reshard_bytes_per_rank"]
            if tp == 1:
                assert got == (n - 1) * controller["weight_bytes"]["actor"], step
            else:
                ideal = (1 / tp - 1 / n) * whole
                assert ideal <= got <= ideal + 0.03 * whole, (got, ideal, whole)
    else:
        assert "perf/reshard_bytes_per_rank" not in controller["metrics"][-1]


@pytest.mark.parametrize("estimator", ["grpo", "gae"])
def test_data_parallel_equals_one_process(job_files, estimator):
    single = run_job(job_files, estimator, 1)[0]
    assert single["world_size"] == 1
    for world in (2, 4):
        assert_same_run(single, run_job(job_files, estimator, world))


def test_zero3_variants_equal_one_process(job_files):
    """ZeRO-3 with the layers' weights kept from forward to backward (reshard_after_forward=false), the backward
    recomputing each layer (gradient checkpointing: the gather happens inside the recomputation), and token-budget
    micro-batches (use_dynamic_bsz: the ranks agree on one micro-batch count, since every sharded forward is a
    collective) takes the steps one process takes."""
    extra = ("actor_rollout_ref.actor.fsdp_config.reshard_after_forward=false",
             "actor_rollout_ref.model.enable_gradient_checkpointing=true",
             "actor_rollout_ref.actor.use_dynamic_bsz=true", "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=40",
             "actor_rollout_ref.rollout.log_prob_use_dynamic_bsz=true",
             "actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu=40")
    assert_same_run(run_job(job_files, "grpo", 1, *extra)[0], run_job(job_files, "grpo", 2, *extra))


def test_old_log_probs_from_the_sharded_update_are_the_passes(job_files):
    """actor.old_log_prob_from_update over ZeRO-3 ranks: with the log-prob pass's micro-batches in the update, each
    rank's update gives its rows' old log-probs and the pass is skipped -- every number bit for bit the run's that
    recomputes them."""
    extra = ("actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=2",)
    fused = run_job(job_files, "grpo", 2, *extra)
    separate = run_job(job_files, "grpo", 2, *extra, "actor_rollout_ref.actor.old_log_prob_from_update=false")
    for one, other in zip(fused[0]["metrics"], separate[0]["metrics"]):
        assert "timing_s/old_log_prob" in other and "timing_s/old_log_prob" not in one
        for key, value in one.items():
            if not key.startswith(("timing_s/", "timing_per_token_ms/", "perf/")):
                assert value == other[key], key
    for name, weight in separate[0]["state"].items():
        assert torch.equal(fused[0]["state"][name], weight), name


def test_gather_prefetch_equals_one_process(job_files):
    """fsdp_config.forward_prefetch: each decoder layer's all-gather is in flight while the layer before computes
    (Gloo moves it on its own threads: a real overlap), beside the backward's prefetch and the reduce-scatters left in
    flight while the next layer's backward runs; with gradient checkpointing the backward also recomputes each layer.
    The actor and the critic still take the steps one process takes."""
    extra = ("actor_rollout_ref.actor.fsdp_config.forward_prefetch=true", "critic.fsdp.forward_prefetch=true",
             "actor_rollout_ref.model.enable_gradient_checkpointing=true")
    assert_same_run(run_job(job_files, "gae", 1, *extra)[0], run_job(job_files, "gae", 2, *extra))


def test_layout_must_fit_the_launch(job_files, monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    cfg = verl.load_config(overrides=overrides(job_files, "grpo", 2, job_files["dir"] + "/layout"))
    with pytest.raises(verl.ConfigError, match=r"trainer\.nnodes \(1\) x trainer\.n_gpus_per_node \(2\) = 2 ranks"):
        verl.PPOTrainer(config=cfg, reward_fn=lambda response: 0.0)
    with pytest.raises(verl.ConfigError, match="a world of 4 ranks"):
        distributed.check_layout(cfg, 4)
    distributed.check_layout(cfg, 2)


def test_hsdp_equals_one_process(job_files):
    """verl's fsdp_size below the world size (HSDP, FSDP's HYBRID_SHARD): at N = 4 the actor is sharded within groups
    of 2 ranks (laid out for a TP-2 rollout) and the critic is replicated whole on every rank (fsdp_size 1, plain data
    parallel); gradients are averaged over all 4 ranks, so the run is one process's, with each rank holding
    1/fsdp_size of each model's weights and AdamW state."""
    single = run_job(job_files, "gae", 1)[0]
    extra = ("actor_rollout_ref.actor.fsdp_config.fsdp_size=2", "critic.fsdp.fsdp_size=1",
             "actor_rollout_ref.rollout.tensor_model_parallel_size=2")
    ranks = run_job(job_files, "gae", 4, *extra, save=True)
    assert_same_run(single, ranks, tp=2, fsdp={"actor": 2, "critic": 1})
    # The checkpoint holds one shard group's files (the other groups hold the same shards), and they join to the
    # weights the ranks gather.
    from verl import _C

    state = ranks[0]["state"]
    for role, size in (("actor", 2), ("critic", 1)):
        role_dir = os.path.join(ranks[0]["checkpoint"], role)
        shards = sorted(f for f in os.listdir(role_dir) if f.endswith(".safetensors"))
        assert shards == sorted(f"{kind}_world_size_{size}_rank_{r}.safetensors"
                                for kind in ("model", "optim") for r in range(size)), shards
        joined = _C.model.load_sharded_pretrained(role_dir, None, "cpu", role == "critic").state_dict()
        for name, w in joined.items():
            assert torch.equal(w, state[f"{role}.{name}"]), (role, name)


def test_fsdp_size_that_does_not_divide_the_ranks_is_refused(job_files):
    """fsdp_size must divide the ranks (and the rollout's TP size must divide the actor's): a ConfigError naming the
    key before any process group forms, not a silently different layout. -1 and the world size both mean all
    ranks."""
    for key in ("actor_rollout_ref.actor.fsdp_config.fsdp_size", "critic.fsdp.fsdp_size"):
        cfg = verl.load_config(overrides=overrides(job_files, "gae", 1, job_files["dir"] + "/fsdp") + [f"{key}=2"])
        with pytest.raises(verl.ConfigError, match=key.replace(".", r"\.") + r" = 2 does not divide the job's 1 ranks"):
            verl.PPOTrainer(config=cfg, reward_fn=lambda response: 0.0)
    cfg = verl.load_config(overrides=overrides(job_files, "gae", 4, job_files["dir"] + "/fsdp4") + [
        "actor_rollout_ref.actor.fsdp_config.fsdp_size=2", "actor_rollout_ref.rollout.tensor_model_parallel_size=4"])
    with pytest.raises(verl.ConfigError, match=r"tensor_model_parallel_size = 4 does not divide .*fsdp_size = 2"):
        distributed.fsdp_size(cfg, "actor")
    cfg = verl.load_config(overrides=overrides(job_files, "gae", 1, job_files["dir"] + "/fsdp1") +
                           ["actor_rollout_ref.actor.fsdp_config.fsdp_size=1"])
    verl.PPOTrainer(config=cfg, reward_fn=lambda response: 0.0)


def test_launch_env_is_checked():
    assert distributed.LaunchEnv.from_environ({}) == distributed.LaunchEnv(1, 0, 0)
    assert distributed.LaunchEnv.from_environ({"WORLD_SIZE": "4", "RANK": "3", "LOCAL_RANK": "1"}) == \
        distributed.LaunchEnv(4, 3, 1)
    for bad in ({"WORLD_SIZE": "2", "RANK": "2"}, {"WORLD_SIZE": "x"}):
        with pytest.raises(verl.ConfigError, match="WORLD_SIZE"):
            distributed.LaunchEnv.from_environ(bad)


def test_a_killed_rank_ends_the_job(job_files):
    """kill -9 of one rank mid-training: the job ends (non-zero) well within a minute, and the report names the
    lost rank -- never a silent hang."""
    import signal
    import time

    out = os.path.join(job_files["dir"], "killed.pt")
    args = [os.path.join(HERE, "dp_job.py"), out,
            *overrides(job_files, "grpo", 2, out + ".d"), "actor_rollout_ref.nccl_timeout=60",
            "trainer.total_training_steps=1000", "trainer.total_epochs=1000"]
    env = dict(os.environ, OMP_NUM_THREADS="1", VERL_DP_JOB_PIDFILE=out + ".pid")
    proc = subprocess.Popen([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
                             *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        pidfile = out + ".pid.rank1"
        deadline = time.monotonic() + 300
        while not os.path.exists(pidfile + ".stepped"):  # rank 1 is inside training
            assert proc.poll() is None, proc.stdout.read()[-4000:]
            assert time.monotonic() < deadline, "the job never reached its first step"
            time.sleep(0.2)
        with open(pidfile) as f:
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


def test_main_ppo_starts_its_local_ranks(job_files):
    """verl's one-command habit: main_ppo with trainer.n_gpus_per_node=2 and no torchrun starts the 2 local ranks
    itself (torch's elastic launcher) and trains."""
    out = os.path.join(job_files["dir"], "cli")
    args = overrides(job_files, "grpo", 2, out) + ["trainer.total_training_steps=2", "trainer.save_freq=2",
                                                   "custom_reward_function.path=" + os.path.join(HERE, "dp_job.py"),
                                                   "custom_reward_function.name=compute_score"]
    run_cli(args, cwd=job_files["dir"])
    assert os.path.isdir(os.path.join(out, "ckpt", "global_step_2", "actor"))


def run_cli(args: list[str], cwd: str) -> None:
    """``python -m verl.trainer.main_ppo ARGS`` without torchrun (it starts the ranks), in ``cwd`` (the metrics file
    goes to <cwd>/<project>/<experiment>.jsonl)."""
    env = {k: v for k, v in os.environ.items() if k not in ("WORLD_SIZE", "RANK", "LOCAL_RANK")}
    env["OMP_NUM_THREADS"] = "1"
    proc = subprocess.run([sys.executable, "-m", "verl.trainer.main_ppo", *args], env=env, capture_output=True,
                          text=True, timeout=600, cwd=cwd)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]


def test_resume_at_the_same_world_size_continues_exactly(job_files, tmp_path):
    """N = 2, GAE with a critic: 4 steps straight == 2 steps + checkpoint + a new job resuming (resume_mode=auto) + 2
    steps, every metric bit for bit (wall-clock ones aside)."""
    from verl.utils.tracking import read_metrics

    def args(name: str, steps: int, *extra: str, world: int = 2) -> list[str]:
        return overrides(job_files, "gae", world, str(tmp_path / name)) + [
            "custom_reward_function.path=" + os.path.join(HERE, "dp_job.py"), "custom_reward_function.name=compute_score",
            f"trainer.total_training_steps={steps}", f"trainer.experiment_name={name}", "trainer.total_epochs=2",
            "trainer.logger=[console,file]", *extra]

    run_cli(args("a", 4), cwd=str(tmp_path))
    run_cli(args("b", 2, "trainer.save_freq=2"), cwd=str(tmp_path))
    run_cli(args("b", 4), cwd=str(tmp_path))
    a = dict(read_metrics(tmp_path / "proj" / "a.jsonl"))
    b = dict(read_metrics(tmp_path / "proj" / "b.jsonl"))
    assert sorted(a) == sorted(b) == [1, 2, 3, 4]
    wall_clock = ("timing_s/", "timing_per_token_ms/", "perf/mfu/", "perf/time_per_step", "perf/throughput")
    for step in (1, 2, 3, 4):
        for key, value in a[step].items():
            if not key.startswith(wall_clock):
                assert b[step][key] == value, (step, key, value, b[step][key])

    # N = 2 wrote per-rank shard files (read back each by its own rank above). They resume at N = 1 (joined into the
    # whole model) and N = 4 (joined and re-sliced), and steps 3-4 match (to summation order: another N adds the
    # gradients in another order).
    for role in ("actor", "critic"):
        files = set(os.listdir(tmp_path / "b" / "ckpt" / "global_step_2" / role))
        assert {f"{kind}_world_size_2_rank_{r}.safetensors" for kind in ("model", "optim") for r in (0, 1)} <= files
        assert "model.safetensors" not in files and "optim.pt" not in files, files
    import shutil

    for world in (1, 4):
        name = f"n{world}"
        shutil.copytree(tmp_path / "b" / "ckpt", tmp_path / name / "ckpt")
        if (tmp_path / name / "ckpt" / "global_step_4").exists():
            shutil.rmtree(tmp_path / name / "ckpt" / "global_step_4")
        (tmp_path / name / "ckpt" / "latest_checkpointed_iteration.txt").write_text("2")
        run_cli(args(name, 4, world=world), cwd=str(tmp_path))
        other = dict(read_metrics(tmp_path / "proj" / f"{name}.jsonl"))
        assert sorted(other) == [3, 4], sorted(other)
        for step in (3, 4):
            for key in SAME_METRICS:
                if key in a[step]:
                    assert other[step][key] == pytest.approx(a[step][key], rel=1e-5, abs=1e-6), (world, step, key)


def test_a_rank_that_fails_is_named_on_every_rank(job_files, tmp_path):
    """An error inside a dispatched method on another rank reaches the controller with its class and the rank's
    number, and every rank's call raises it (no rank left waiting)."""
    import json

    rows = tmp_path / "uneven.jsonl"
    with open(rows, "w") as f:
        for i in range(4):  # the last two prompts (rank 1's rows) are far longer than the first two
            text = "Compute 1+2." if i < 2 else "Compute " + " + ".join(str(k) for k in range(12)) + "."
            f.write(json.dumps({"data_source": "toy", "prompt": [{"role": "user", "content": text}],
                                "reward_model": {"ground_truth": "3"}}) + "\n")
    script = tmp_path / "fail.py"
    script.write_text(
        "import os, sys, verl\n"
        "from verl import DataProto, PPOTrainer\n"
        "cfg = verl.load_config(overrides=sys.argv[1:])\n"
        "trainer = PPOTrainer(config=cfg, reward_fn=lambda response: 0.0)\n"
        "batch = next(iter(trainer.train_dataloader))\n"
        "try:\n"
        "    trainer.step(DataProto.from_single_dict(batch))\n"
        "except verl.InvalidArgumentError as e:\n"
        "    print(f\"rank {os.environ['RANK']} raised: {e}\", flush=True)\n"
        "    sys.exit(3)\n")
    args = overrides(job_files, "grpo", 2, str(tmp_path / "fail")) + [
        f"data.train_files={rows}", "data.max_prompt_length=64", "actor_rollout_ref.rollout.max_model_len=40"]
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
                           str(script), *args], env=dict(os.environ, OMP_NUM_THREADS="1"), capture_output=True,
                          text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    for rank in (0, 1):
        assert f"rank {rank} raised: rank 1 failed in 'generate': prompt_token_ids: prompt length" in out, out[-4000:]


def test_mini_batches_that_do_not_split_over_the_ranks_are_refused_at_start(job_files, tmp_path):
    script = tmp_path / "split.py"
    script.write_text(
        "import sys, verl\n"
        "try:\n"
        "    verl.PPOTrainer(config=verl.load_config(overrides=sys.argv[1:]), reward_fn=lambda response: 0.0)\n"
        "except verl.ConfigError as e:\n"
        "    sys.stdout.write(f'refused: {e}\\n')  # one write: the ranks' lines do not interleave\n"
        "    sys.stdout.flush()\n"
        "    sys.exit(3)\n")
    # 1 prompt x n=3 = 3 rows per mini-batch, which 2 ranks cannot share
    args = overrides(job_files, "grpo", 2, str(tmp_path / "split")) + [
        "actor_rollout_ref.rollout.n=3", "actor_rollout_ref.actor.ppo_mini_batch_size=1",
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1"]
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
                           str(script), *args], env=dict(os.environ, OMP_NUM_THREADS="1"), capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode != 0
    assert proc.stdout.count("refused: config key 'actor_rollout_ref.actor.ppo_mini_batch_size' gives mini-batches "
                             "of 3 rows") == 2, proc.stdout[-3000:] + proc.stderr[-3000:]


def test_every_rank_writes_its_shard_and_the_merger_joins_them(job_files, tmp_path):
    """GAE at N = 2, the actor laid out for a TP-2 rollout (the 3D-HybridEngine's TP-slice image): the checkpoint is
    every rank's own shard -- about half the model each, nothing gathered -- and verl's merger command joins them into
    a Hugging Face checkpoint holding exactly the weights the ranks gather, which transformers loads with our logits."""
    from safetensors.torch import load_file

    ranks = run_job(job_files, "gae", 2, "actor_rollout_ref.rollout.tensor_model_parallel_size=2", save=True)
    checkpoint = ranks[0]["checkpoint"]
    state = ranks[0]["state"]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    for role, value in (("actor", False), ("critic", True)):
        role_dir = os.path.join(checkpoint, role)
        files = set(os.listdir(role_dir))
        assert {"config.json", "tokenizer.json"} <= files and "model.safetensors" not in files, files
        whole = sum(w.numel() * w.element_size() for name, w in state.items() if name.startswith(role + "."))
        for r in (0, 1):
            size = os.path.getsize(os.path.join(role_dir, f"model_world_size_2_rank_{r}.safetensors"))
            assert 0.4 * whole < size < 0.6 * whole, (role, r, size, whole)
        target = tmp_path / f"{role}-hf"
        cmd = [sys.executable, "-m", "verl.model_merger", "merge", "--backend", "fsdp", "--local_dir", role_dir,
               "--target_dir", str(target)] + (["--is-value-model"] if value else [])
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        merged = load_file(str(target / "model.safetensors"))
        expected = {name[len(role) + 1:]: w for name, w in state.items() if name.startswith(role + ".")}
        assert sorted(merged) == sorted(expected)
        for name, w in expected.items():
            assert torch.equal(merged[name], w), (role, name)
    transformers = pytest.importorskip("transformers")
    hf = transformers.AutoModelForCausalLM.from_pretrained(str(tmp_path / "actor-hf"), torch_dtype=torch.float32)
    ids = torch.tensor([[3, 17, 5, 9, 30, 2]])
    ours = verl.models.load_model(str(tmp_path / "actor-hf"))
    with torch.no_grad():
        torch.testing.assert_close(ours(ids), hf(ids).logits, rtol=1e-5, atol=1e-5)


def _worker_pid(marker: str, rank: int) -> int | None:
    """The pid of the first-attempt torchrun worker of global RANK ``rank`` whose command line holds ``marker`` (read
    from /proc: the workers are torchrun's children, not this test's)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
            with open(f"/proc/{entry}/environ", "rb") as f:
                environ = f.read().split(b"\0")
        except OSError:
            continue
        if (marker.encode() in cmdline and f"RANK={rank}".encode() in environ
                and b"TORCHELASTIC_RESTART_COUNT=0" in environ):
            return int(entry)
    return None


@contextlib.contextmanager
def _two_hosts():
    """Two network namespaces joined by a veth pair: two hosts, each with its own address and no shared loopback,
    as two machines on one network are (root and iproute2 needed, else the test is skipped). Yields each host's
    (namespace, address, interface)."""
    import shutil

    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("two network namespaces need root and iproute2")
    tag = f"vd{os.getpid() % 100000}"  # interface names: at most 15 characters
    hosts = [(f"{tag}a", "10.213.77.1", f"{tag}x"), (f"{tag}b", "10.213.77.2", f"{tag}y")]
    steps = [["netns", "add", hosts[0][0]], ["netns", "add", hosts[1][0]],
             ["link", "add", hosts[0][2], "type", "veth", "peer", "name", hosts[1][2]]]
    for ns, address, interface in hosts:
        steps += [["link", "set", interface, "netns", ns], ["-n", ns, "addr", "add", f"{address}/24", "dev", interface],
                  ["-n", ns, "link", "set", interface, "up"], ["-n", ns, "link", "set", "lo", "up"],
                  ["netns", "exec", ns, "true"]]  # running in it needs more privileges than making it
    try:
        for step in steps:
            proc = subprocess.run(["ip", *step], capture_output=True, text=True)
            if proc.returncode != 0:
                pytest.skip(f"network namespaces are not available here: ip {' '.join(step)}: {proc.stderr.strip()}")
        yield hosts
    finally:
        for ns, _, _ in hosts:  # the veth pair goes with its namespaces
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


@pytest.mark.parametrize("nodes", ["1", "2", "2 hosts"])
def test_torchrun_restart_resumes_from_the_last_complete_checkpoint(job_files, tmp_path, nodes):
    """Item 7's recovery: kill -9 of rank 1 once step 2's checkpoint is complete; torchrun (--max-restarts=1) restarts
    the ranks, resume_mode=auto continues from the newest complete checkpoint (each rank from its own shard files)
    and the run ends with the metrics of an uninterrupted one, bit for bit (wall-clock ones aside). ``nodes="2"``: two
    torchrun agents on this host, one rank each, meeting through the c10d rendezvous as two machines would (each
    agent counts its own restarts; the fresh process-group store rank 0 serves each attempt keeps them apart).
    ``nodes="2 hosts"``: the same agents on two hosts of their own (network namespaces, _two_hosts), so nothing may
    reach another node through 127.0.0.1: the rendezvous, the process-group store and Gloo go over the hosts'
    addresses, as on a cluster (torchrun's --local-addr and GLOO_SOCKET_IFNAME name them)."""
    with contextlib.ExitStack() as stack:
        hosts = stack.enter_context(_two_hosts()) if nodes == "2 hosts" else None
        _restart_and_compare(job_files, tmp_path, nodes, hosts)


def _restart_and_compare(job_files, tmp_path, nodes: str, hosts: list[tuple[str, str, str]] | None) -> None:
    """The body of test_torchrun_restart_resumes_from_the_last_complete_checkpoint (`hosts`: _two_hosts's, or None)."""
    import signal
    import socket
    import time

    from verl.utils.tracking import read_metrics

    def args(name: str) -> list[str]:
        return overrides(job_files, "grpo", 2, str(tmp_path / name)) + [
            "custom_reward_function.path=" + os.path.join(HERE, "dp_job.py"), "custom_reward_function.name=compute_score",
            "trainer.total_training_steps=4", f"trainer.experiment_name={name}", "trainer.total_epochs=2",
            "trainer.logger=[console,file]", "trainer.save_freq=1"]

    run_cli(args("straight"), cwd=str(tmp_path))
    env = {k: v for k, v in os.environ.items() if k not in ("WORLD_SIZE", "RANK", "LOCAL_RANK")}
    env["OMP_NUM_THREADS"] = "1"
    marker = str(tmp_path / "restarted")
    iteration = tmp_path / "restarted" / "ckpt" / "latest_checkpointed_iteration.txt"
    # Step 3's scoring waits while the hold file exists and step 2 is the newest checkpoint: the kill below lands
    # between the two steps, however fast they run (it once raced a 0.04 s step).
    hold = tmp_path / "hold"
    hold.touch()
    env["VERL_DP_JOB_HOLD"] = f"{iteration}:2:{hold}"
    job = ["-m", "verl.trainer.main_ppo", *args("restarted")]
    torchrun = [sys.executable, "-m", "torch.distributed.run"]
    if nodes == "1":
        launches = [torchrun + ["--standalone", "--nproc_per_node=2"]]
    elif hosts is None:
        with socket.socket() as s:  # a free port for the rendezvous
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        launches = [torchrun + ["--nnodes=2", "--nproc_per_node=1", "--rdzv-backend=c10d",
                                f"--rdzv-endpoint=127.0.0.1:{port}", "--rdzv-id=restart-test"]] * 2
    else:
        # Each agent in its host's namespace. The first hosts the rendezvous (torchrun recognises its own endpoint by
        # hostname, and both hosts share this one), each names its address, and Gloo its interface.
        launches = [["ip", "netns", "exec", ns, "env", f"GLOO_SOCKET_IFNAME={interface}", *torchrun, "--nnodes=2",
                     "--nproc_per_node=1", "--rdzv-backend=c10d", f"--rdzv-endpoint={hosts[0][1]}:29500",
                     "--rdzv-id=restart-test", f"--rdzv-conf=is_host={int(i == 0)}", f"--local-addr={address}"]
                    for i, (ns, address, interface) in enumerate(hosts)]
    if nodes != "1":
        job += ["trainer.nnodes=2", "trainer.n_gpus_per_node=1"]
    logs = [open(tmp_path / f"agent{i}.log", "w+") for i in range(len(launches))]  # no pipe to fill and stall
    procs = [subprocess.Popen([*launch, "--max-restarts=1", *job], env=env, cwd=str(tmp_path), stdout=log,
                              stderr=subprocess.STDOUT, text=True)
             for launch, log in zip(launches, logs)]

    def output() -> str:
        text = []
        for log in logs:
            log.flush()
            log.seek(0)
            text.append(log.read())
        return "\n".join(text)

    try:
        deadline = time.monotonic() + 300
        while not (iteration.exists() and iteration.read_text().strip() == "2"):
            for proc in procs:
                assert proc.poll() is None, output()[-4000:]
            assert time.monotonic() < deadline, "the job never checkpointed step 2"
            time.sleep(0.05)
        pid = _worker_pid(marker, 1)
        assert pid is not None
        if hosts is not None:  # the two ranks really are on two hosts: different network namespaces
            first = _worker_pid(marker, 0)
            assert first is not None
            assert os.readlink(f"/proc/{first}/ns/net") != os.readlink(f"/proc/{pid}/ns/net")
        os.kill(pid, signal.SIGKILL)
        hold.unlink()  # the restarted ranks score step 3
        end = time.monotonic() + 300
        for proc in procs:
            proc.wait(timeout=max(1.0, end - time.monotonic()))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    text = output()
    for log in logs:
        log.close()
    for proc in procs:
        assert proc.returncode == 0, text[-6000:]
    assert "exitcode: -9" in text, text[-6000:]  # killed, then restarted
    straight = dict(read_metrics(tmp_path / "proj" / "straight.jsonl"))
    restarted = dict(read_metrics(tmp_path / "proj" / "restarted.jsonl"))
    assert sorted(restarted) == sorted(straight) == [1, 2, 3, 4]
    wall_clock = ("timing_s/", "timing_per_token_ms/", "perf/mfu/", "perf/time_per_step", "perf/throughput")
    for step in (1, 2, 3, 4):
        for key, value in straight[step].items():
            if not key.startswith(wall_clock):
                assert restarted[step][key] == value, (step, key, value, restarted[step][key])
