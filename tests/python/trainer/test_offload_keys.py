"""fsdp_config.param_offload / optimizer_offload (actor, ref) and critic.fsdp.* on a CPU device: parameters and
optimizer state already live in host memory, so the keys are honoured as a no-op with one note -- the run is
exactly the run without them. (On CUDA they are a ConfigError: tests/cpp/trainer/test_offload_keys.cpp.)"""

from __future__ import annotations

import math

import torch

from verl import PPOTrainer, RLConfig

from trainer_helpers import toy_overrides

OFFLOAD = [f"{role}.{leaf}=true" for role in ("actor_rollout_ref.actor.fsdp_config", "actor_rollout_ref.ref.fsdp_config",
                                              "critic.fsdp") for leaf in ("param_offload", "optimizer_offload")]


def digit_fraction(response: str) -> float:
    return sum(c.isdigit() for c in response) / max(len(response), 1)


def one_step(tiny_model_dir, toy_data, out_dir, extra):
    # gae with KL loss: actor, reference and critic all exist
    cfg = RLConfig(overrides=[*toy_overrides(tiny_model_dir, str(out_dir), "gae", 1),
                              "actor_rollout_ref.actor.use_kl_loss=true", *extra])
    trainer = PPOTrainer(config=cfg, reward_fn=digit_fraction, train_dataset=toy_data["train"])
    rows = [trainer.train_dataset[i] for i in range(4)]
    rollouts = trainer.collect_rollouts(rows)
    trainer.compute_rewards(rollouts)
    metrics = trainer.optimize(rollouts)
    return metrics, trainer.last_batch


def test_offload_on_cpu_is_a_noted_no_op(tiny_model_dir, toy_data, tmp_path, capfd):
    base, base_batch = one_step(tiny_model_dir, toy_data, tmp_path / "base", [])
    assert "nothing to offload" not in capfd.readouterr().err
    offloaded, batch = one_step(tiny_model_dir, toy_data, tmp_path / "offload", OFFLOAD)
    err = capfd.readouterr().err
    assert err.count("there is nothing to offload") == 1, err[-2000:]
    assert "actor_rollout_ref.ref.fsdp_config.param_offload=true" in err and "critic.fsdp.optimizer_offload=true" in err
    assert "actor/kl_loss" in offloaded and "critic/vf_loss" in offloaded
    for key, value in base.items():
        if key.startswith(("timing_s/", "timing_per_token_ms/", "perf/mfu/")) or key in ("perf/time_per_step",
                                                                                         "perf/throughput"):
            continue  # wall-clock dependent
        assert offloaded[key] == value or (math.isnan(value) and math.isnan(offloaded[key])), key
    assert torch.equal(batch.batch["advantages"], base_batch.batch["advantages"])
