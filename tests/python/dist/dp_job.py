"""One data-parallel training job, run under torchrun by test_data_parallel.py (or as one process): the toy GRPO /
PPO config of the trainer tests for a few steps. Every rank writes the metrics it returned, the final actor (and critic)
weights gathered from the ranks' ZeRO-3 shards, and the bytes of weights and AdamW state it holds to OUT.rankR.

    python dp_job.py OUT key=value ...
"""

from __future__ import annotations

import json
import os
import sys
import time

import torch

import verl
from verl import DataProto, PPOTrainer


def reward(response: str) -> float:
    # Dense and varied, so GRPO groups have non-zero advantages on a random model.
    return (len(response) % 5) / 4.0


def compute_score(data_source, solution_str, ground_truth, extra_info=None) -> float:
    """The same reward in verl's custom_reward_function form (the CLI test). VERL_DP_JOB_HOLD=LATEST:STEP:FILE: while
    FILE exists and the checkpoint tracker LATEST reads STEP, scoring waits -- the restart test's window between two
    steps, however fast the steps are."""
    hold = os.environ.get("VERL_DP_JOB_HOLD")
    if hold:
        latest, step, flag = hold.split(":", 2)
        while os.path.exists(flag) and os.path.exists(latest) and open(latest).read().strip() == step:
            time.sleep(0.01)
    return reward(solution_str)


def main() -> None:
    out, overrides = sys.argv[1], sys.argv[2:]
    config = verl.load_config(overrides=overrides)
    trainer = PPOTrainer(config=config, reward_fn=reward)
    steps = []
    pidfile = os.environ.get("VERL_DP_JOB_PIDFILE")  # the fault test kills a rank by this pid
    if pidfile:
        with open(f"{pidfile}.rank{os.environ.get('RANK', '0')}", "w") as f:
            f.write(str(os.getpid()))
    total = int(config.get("trainer.total_training_steps"))
    while len(steps) < total:  # epochs
        for batch in trainer.train_dataloader:
            result = trainer.step(DataProto.from_single_dict(batch))
            steps.append(dict(result.metrics))
            if pidfile and len(steps) == 1:
                open(f"{pidfile}.rank{os.environ.get('RANK', '0')}.stepped", "w").close()
            if len(steps) == total:
                break
    rank = int(os.environ.get("RANK", "0"))
    # Every rank returns the controller's metrics ...
    assert [s["training/global_step"] for s in steps] == list(range(1, len(steps) + 1)), (rank, steps)
    # ... and the weights gathered from the ranks' shards (every rank takes part and gets them), and what it holds.
    roles = ("actor", "critic") if trainer._trainer.critic_model is not None else ("actor",)
    state = {f"{role}.{k}": v for role in roles for k, v in trainer.model_state_dict(role).items()}
    optimizer_bytes = {role: trainer._trainer.optimizer_state_bytes(role) for role in roles}
    weight_bytes = {role: trainer._trainer.model_weight_bytes(role) for role in roles}
    # VERL_DP_JOB_SAVE: a checkpoint of the final state too (the sharded-checkpoint test merges it).
    checkpoint = trainer.save_checkpoint() if os.environ.get("VERL_DP_JOB_SAVE") else None
    torch.save({"metrics": steps, "state": state, "world_size": trainer._trainer.world_size,
                "optimizer_bytes": optimizer_bytes, "weight_bytes": weight_bytes, "checkpoint": checkpoint},
               f"{out}.rank{rank}")

if __name__ == "__main__":
    main()
