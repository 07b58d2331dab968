"""One timed data-parallel GRPO job for bench_dp.py (run as one process or under torchrun): warm-up steps, then
timed steps; rank 0 writes each timed step's timing_s/step and perf/total_num_tokens to OUT (JSON).

    python dp_step_job.py OUT WARMUP key=value ...
"""

from __future__ import annotations

import json
import os
import sys

import verl
from verl import DataProto, PPOTrainer


def reward(response: str) -> float:
    return (len(response) % 5) / 4.0


def main() -> None:
    out, warmup, overrides = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    config = verl.load_config(overrides=overrides)
    trainer = PPOTrainer(config=config, reward_fn=reward)
    total = int(config.get("trainer.total_training_steps"))
    steps = []
    while len(steps) < total:
        for batch in trainer.train_dataloader:
            steps.append(dict(trainer.step(DataProto.from_single_dict(batch)).metrics))
            if len(steps) == total:
                break
    if int(os.environ.get("RANK", "0")) == 0:
        timed = steps[warmup:]
        with open(out, "w") as f:
            json.dump({"world_size": trainer._trainer.world_size,
                       "step_s": [s["timing_s/step"] for s in timed],
                       "tokens": [s["perf/total_num_tokens"] for s in timed],
                       "reshard_bytes": [s.get("perf/reshard_bytes_per_rank", 0) for s in timed],
                       "actor_weight_bytes": trainer._trainer.model_weight_bytes("actor") * trainer._trainer.world_size,
                       "stages": {k: [s[k] for s in timed] for k in timed[0] if k.startswith("timing_s/")}}, f)


if __name__ == "__main__":
    main()
