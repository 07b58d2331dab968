"""The SFT and DPO trainers over data-parallel ranks (issue 41's acceptance): before the training engine, ``torchrun
--nproc_per_node=2 -m verl.trainer.sft_trainer`` ran two independent copies of the whole job (two loss curves in one
metrics file, each rank training on the whole batch). Now every rank trains on its share of each batch on the engine
(ZeRO-3: 1/N of the weights and of the AdamW state per rank), and N ranks equal one process: the same metrics at every
step and the same final weights (<= 1e-5, fp32), at N = 2 through the one-command launch (``trainer.n_gpus_per_node=2``
without torchrun) and at N = 4 under torchrun. ``engine.dtype`` is honoured there: bf16 compute gives other numbers
than fp32, and the same at 2 ranks as in one process (to bf16's precision)."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import pytest
import torch

import verl
from verl import _C
from verl.utils.tracking import read_metrics

from trainer_helpers import pair_rows, write_jsonl

pytestmark = pytest.mark.dist

STEPS = 4
BATCH = 8  # rows (SFT) or pairs (DPO) per step: divides over 1, 2 and 4 ranks


def sft_rows(n: int) -> list[dict]:
    return [{"prompt": [{"role": "user", "content": f"Compute {(7 * i + 3) % 50}+{(11 * i + 5) % 50}."}],
             "response": str((7 * i + 3) % 50 + (11 * i + 5) % 50)} for i in range(n)]


def overrides(kind: str, model_dir: str, data: str, out: str, name: str, dtype: str) -> list[str]:
    args = [f"model.path={model_dir}", f"data.train_files={data}", f"data.train_batch_size={BATCH}",
            "data.max_length=64", f"trainer.total_training_steps={STEPS}", "trainer.total_epochs=4",
            f"trainer.default_local_dir={out}/{name}", "trainer.logger=[console]", "trainer.device=cpu",
            "trainer.project_name=dp", f"trainer.experiment_name={name}", "model.enable_gradient_checkpointing=false",
            "optim.lr=1e-2", "optim.lr_scheduler_type=cosine", "optim.lr_warmup_steps_ratio=0.25",
            f"engine.dtype={dtype}"]
    if kind == "dpo":  # fixed micro-batches of one pair here; SFT keeps the token budget (use_dynamic_bsz)
        args += ["data.use_dynamic_bsz=false", "data.micro_batch_size_per_gpu=1", "dpo.beta=0.5"]
    return args


def run(kind: str, world: int, args: list[str], cwd: str, torchrun: bool) -> None:
    module = f"verl.trainer.{kind}_trainer"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    if torchrun:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={world}", "-m",
               module, *args, "trainer.n_gpus_per_node=" + str(world)]
    else:  # one process, or the one-command launch that starts `world` local ranks itself
        cmd = [sys.executable, "-m", module, *args, f"trainer.n_gpus_per_node={world}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]


def metrics(cwd: str, name: str) -> list[dict]:
    records = read_metrics(os.path.join(cwd, "dp", f"{name}.jsonl"))
    assert [step for step, _ in records] == list(range(1, STEPS + 1)), [step for step, _ in records]  # one writer
    return [{k: v for k, v in data.items() if not k.startswith("timing_s/") and "mfu" not in k} for _, data in records]


def final_weights(out: str, name: str) -> dict[str, torch.Tensor]:
    actor = os.path.join(out, name, f"global_step_{STEPS}", "actor")
    if _C.model.is_sharded_checkpoint(actor):
        return dict(_C.model.load_sharded_pretrained(actor, "auto", "cpu", False).state_dict())
    return dict(verl.models.load_model(actor).state_dict())


def shard_bytes(out: str, name: str, world: int, prefix: str) -> list[int]:
    actor = os.path.join(out, name, f"global_step_{STEPS}", "actor")
    return [os.path.getsize(os.path.join(actor, f"{prefix}_world_size_{world}_rank_{r}.safetensors"))
            for r in range(world)]


def assert_metrics_close(got: list[dict], want: list[dict], rel: float) -> None:
    for step, (g, w) in enumerate(zip(got, want), 1):
        assert sorted(g) == sorted(w), step
        for key in w:
            assert g[key] == pytest.approx(w[key], rel=rel, abs=rel), (step, key, g[key], w[key])


@pytest.fixture(scope="module")
def runs(tmp_path_factory, tiny_model_dir):
    """Per trainer: one process, 2 ranks by the one-command launch and 4 under torchrun, fp32; bf16 at 1 and 2."""
    out = str(tmp_path_factory.mktemp("dp_runs"))
    done = {}
    for kind, rows in (("sft", sft_rows(2 * BATCH)), ("dpo", pair_rows(2 * BATCH))):
        data = write_jsonl(os.path.join(out, f"{kind}.jsonl"), rows)

        def launch(world: int, dtype: str, torchrun: bool) -> str:
            name = f"{kind}-{world}-{dtype}-{'torchrun' if torchrun else 'spawn'}"
            run(kind, world, overrides(kind, tiny_model_dir, data, out, name, dtype), out, torchrun)
            return name

        done[kind] = {"one": launch(1, "fp32", False), "two": launch(2, "fp32", False),
                      "four": launch(4, "fp32", True)}
        if kind == "sft":
            done[kind].update(one_bf16=launch(1, "bf16", False), two_bf16=launch(2, "bf16", True))
    return out, done


@pytest.mark.parametrize("kind", ["sft", "dpo"])
def test_ranks_equal_one_process_in_metrics_and_weights(runs, kind):
    out, names = runs
    one = metrics(out, names[kind]["one"])
    want = final_weights(out, names[kind]["one"])
    for many in ("two", "four"):
        assert_metrics_close(metrics(out, names[kind][many]), one, rel=1e-5)
        got = final_weights(out, names[kind][many])
        assert sorted(got) == sorted(want)
        for key, tensor in want.items():
            torch.testing.assert_close(got[key], tensor, rtol=1e-5, atol=1e-5, msg=key)
    loss = "train/loss" if kind == "sft" else "loss"
    assert all(math.isfinite(step[loss]) for step in one)
    assert one[-1][loss] < one[0][loss]  # it trains


@pytest.mark.parametrize("kind", ["sft", "dpo"])
def test_each_rank_holds_a_share_of_the_weights_and_the_adamw_state(runs, kind):
    out, names = runs
    whole = sum(t.numel() * t.element_size() for t in final_weights(out, names[kind]["one"]).values())
    for many, world in (("two", 2), ("four", 4)):
        weights = shard_bytes(out, names[kind][many], world, "model")
        moments = shard_bytes(out, names[kind][many], world, "optim")
        for w, m in zip(weights, moments):
            # each rank's file: its 1/N of the fp32 weights (and, for AdamW, two moments of them), plus a header
            assert whole / world <= w <= whole / world * 1.02 + 8192, (world, w, whole)
            assert 2 * whole / world <= m <= 2 * whole / world * 1.02 + 8192, (world, m, whole)


def test_engine_dtype_is_honoured_over_ranks(runs):
    out, names = runs
    fp32, bf16, bf16_two = (metrics(out, names["sft"][k]) for k in ("one", "one_bf16", "two_bf16"))
    assert any(a["train/loss"] != b["train/loss"] for a, b in zip(fp32, bf16))  # bf16 compute: other numbers
    assert_metrics_close(bf16_two, bf16, rel=3e-2)  # ... and the same over 2 ranks, to bf16's precision
