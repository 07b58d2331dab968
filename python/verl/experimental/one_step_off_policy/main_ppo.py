"""``python -m verl.experimental.one_step_off_policy.main_ppo actor_rollout_ref.hybrid_engine=False [key=value ...]``

verl's one-step off-policy entry point: the config is ``one_step_off_ppo_trainer`` (``config/``: free_cache_engine
off, calculate_log_probs on, ``algorithm.rollout_correction.bypass_mode`` on, and the rollout pool's
``rollout.nnodes`` / ``rollout.n_gpus_per_node``) over verl's PPO defaults, then the overrides; ``--config-path DIR
--config-name NAME`` replaces it (the file is then the whole layer over the PPO defaults). As verl's
``OneStepOffRayTrainer``, it requires ``actor_rollout_ref.hybrid_engine=False``. The rollout runs in this process on
the trainer's device, in a thread with a copy of the weights of its own (``verl.PPOTrainer.submit_rollouts``), so
``rollout.nnodes`` must be 1 and ``rollout.n_gpus_per_node`` has no effect; the job is one process
(``trainer.nnodes`` x ``trainer.n_gpus_per_node`` = 1).
"""

from __future__ import annotations

import os
import sys
from typing import Any

import yaml

from ...config import Config, load_config
from ...errors import ConfigError
from ...trainer.main_ppo import explain_keys, parse_args, run_ppo, split_explain

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
    world = int(config.get("trainer.nnodes")) * int(config.get("trainer.n_gpus_per_node"))
    if world != 1:
        raise ConfigError(f"trainer.nnodes x trainer.n_gpus_per_node = {world}: the one-step off-policy trainer runs "
                          "in one process here (the rollout is a thread of it); set both to 1")


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
        run_ppo(config)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
