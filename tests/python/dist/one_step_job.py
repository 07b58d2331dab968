"""One one-step off-policy job (verl's ``one_step_off_policy``), run under torchrun by test_one_step_pool.py (or as one
process): ``fit()`` on the toy GRPO config with ``actor_rollout_ref.hybrid_engine=False``. With
``rollout.n_gpus_per_node`` = R > 0 the last R ranks are the rollout pool. Every rank writes the final actor weights
(gathered from the trainer's shards) and its role to OUT.rankR; the controller's metrics go to the file logger
(VERL_FILE_LOGGER_ROOT). VERL_ONE_STEP_JOB_BY_HAND=1: the loop through submit_rollouts / wait_rollouts / optimize at
the script's top level instead of fit() (no validation).

    python one_step_job.py OUT key=value ...
"""

from __future__ import annotations

import json
import os
import sys

import torch

import verl
from verl import PPOTrainer


def reward(response: str) -> float:
    marker = os.environ.get("VERL_ONE_STEP_JOB_SCORED")  # the fault test: the controller is inside a step
    if marker and not os.path.exists(marker):
        open(marker, "w").close()
    return (len(response) % 5) / 4.0  # dense and varied: GRPO groups get non-zero advantages


def by_hand(trainer: PPOTrainer, out: str) -> None:
    """verl's one-step loop through the public calls at the script's top level (every rank runs them; the controller
    writes the steps' metrics to OUT.metrics.json)."""
    batches = iter(trainer.train_dataloader)
    total = int(trainer.config.get("trainer.total_training_steps"))
    trainer.submit_rollouts(next(batches))
    steps = []
    for step in range(total):
        trajectories = trainer.wait_rollouts()
        if step + 1 < total:
            trainer.submit_rollouts(next(batches))
        steps.append(dict(trainer.optimize(trajectories).metrics))
    if os.environ.get("RANK", "0") == "0":
        with open(f"{out}.metrics.json", "w") as f:
            json.dump(steps, f)


def main() -> None:
    out, overrides = sys.argv[1], sys.argv[2:]
    pidfile = os.environ.get("VERL_ONE_STEP_JOB_PIDFILE")  # the fault test kills a rank by this pid
    if pidfile:
        with open(f"{pidfile}.rank{os.environ.get('RANK', '0')}", "w") as f:
            f.write(str(os.getpid()))
    trainer = PPOTrainer(config=verl.load_config(overrides=overrides), reward_fn=reward)
    if os.environ.get("VERL_ONE_STEP_JOB_BY_HAND"):
        by_hand(trainer, out)
    else:
        trainer.fit()
    state = trainer.model_state_dict("actor")  # every rank takes part; the pool's ranks get the controller's
    try:  # a pool's rank holds no trainer state
        held = trainer._trainer.model_weight_bytes("actor")
    except ValueError as e:
        held = str(e)
    torch.save({"state": state, "pool_rank": trainer._trainer.is_rollout_pool_rank,
                "controller": trainer._trainer.is_controller, "weight_bytes": held,
                "whole_actor": trainer.model is not None and trainer._trainer.actor_model is not None},
               f"{out}.rank{os.environ.get('RANK', '0')}")


if __name__ == "__main__":
    main()
