"""``python -m verl.experimental.one_step_off_policy.main_ppo actor_rollout_ref.hybrid_engine=False [key=value ...]``

verl's one-step off-policy entry point: the config is ``one_step_off_ppo_trainer`` (``config/``: free_cache_engine
off, calculate_log_probs on, ``algorithm.rollout_correction.bypass_mode`` on, and the rollout pool's
``rollout.nnodes`` / ``rollout.n_gpus_per_node``) over verl's PPO defaults, then the overrides; ``--config-path DIR
--config-name NAME`` replaces it (the file is then the whole layer over the PPO defaults). As verl's
``OneStepOffRayTrainer``, it requires ``actor_rollout_ref.hybrid_engine=False``.

Where the rollout runs:
- ``rollout.n_gpus_per_node=N`` (> 0), verl's layout: a rollout pool of ``rollout.nnodes x N`` ranks of its own after
  the trainer's ``trainer.nnodes x trainer.n_gpus_per_node``. Launch all of them with torchrun, or let this command
  start them on this host (``--nproc_per_node`` = the sum). The pool generates batch N+1 while the trainer's ranks train
  on batch N; the controller sends it the weights once per step.
- ``rollout.n_gpus_per_node=0`` (this build's default; verl's is 8): no pool. The rollout runs in the one trainer
  process (``trainer.nnodes x trainer.n_gpus_per_node = 1``), in a thread with a copy of the weights of its own
  (``verl.PPOTrainer.submit_rollouts``).
"""

from __future__ import annotations

import os
import sys
from typing import Any

import yaml

from ...config import Config, load_config
from ...errors import ConfigError
from ...trainer import distributed
from ...trainer.main_ppo import explain_keys, parse_args, run_or_launch, split_explain

CONFIG_NAME = "one_step_off_ppo_trainer"
CONFIG_PATH = os.path.join(os.path.dirname(__file__), "config", CONFIG_NAME + ".yaml")
PROG = "verl.experimental.one_step_off_policy.main_ppo"


def _flatten(node: Any, prefix: str = "") -> list[tuple[str, Any]]:
    if not isinstance(node, dict):
        return [(prefix, node)]
    return [item for key, value in node.items() for item in _flatten(value, f"{prefix}.{key}" if prefix else key)]


def one_step_overrides() -> list[str]:
    """``one_step_off_ppo_trainer.yaml`` as overrides over the PPO defaults (its new ``rollout.*`` keys added)."""
    with open(CONFIG_PATH, encoding="utf-8") as f:
        tree = yaml.safe_load(f)
    base = Config()
    overrides = []
    for key, value in _flatten(tree):
        text = yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("...").strip()
        overrides.append(f"{'' if key in base else '+'}{key}={text}")
    return overrides


def check_one_step_config(config: Config) -> None:
    """ConfigError naming the key for what this trainer cannot run."""
    if config.get("actor_rollout_ref.hybrid_engine"):
        raise ConfigError("actor_rollout_ref.hybrid_engine must be False for the one-step off-policy trainer (verl's "
                          "OneStepOffRayTrainer asserts it): the rollout generates from a copy of the weights of its own")
    world = distributed.trainer_world_size(config)
    if world != 1 and not distributed.rollout_pool_size(config):
        raise ConfigError(f"trainer.nnodes x trainer.n_gpus_per_node = {world} with rollout.n_gpus_per_node = 0: "
                          "without a rollout pool the one-step off-policy trainer runs in one process (the rollout is "
                          "a thread of it); give the rollout ranks of its own with rollout.n_gpus_per_node, or set "
                          "both trainer keys to 1")


def main(argv: list[str] | None = None) -> int:
    try:
        explain, args = split_explain(sys.argv[1:] if argv is None else argv)
        print_config, yaml_path, overrides = parse_args(args, prog=PROG, base_config_name=CONFIG_NAME)
        config = load_config(yaml_path, overrides if yaml_path is not None else one_step_overrides() + overrides)
        if explain:
            sys.stdout.write(explain_keys(explain, config))
            return 0
        if print_config:
            sys.stdout.write(config.to_yaml())
            return 0
        check_one_step_config(config)
        return run_or_launch(config, sys.argv[1:] if argv is None else list(argv), PROG)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
