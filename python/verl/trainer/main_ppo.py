"""``python -m verl.trainer.main_ppo [--print-config] [--explain KEY] [--config-path DIR --config-name NAME] key=value ...``

verl's PPO entry point with verl's config keys. The config is resolved and validated before
anything runs: an unknown key, a wrong type, an out-of-range value or a key verl-cpp does not support
yet (``verl.config_keys``) exits with status 2 and a message naming the key (and the closest valid key
for typos). ``--explain KEY`` says what verl-cpp does with a key.
"""

from __future__ import annotations

import os
import sys

from ..config import Config, load_config
from ..errors import ConfigError
from . import distributed

USAGE = """usage: python -m {prog} [--print-config] [--explain KEY] [--config-path DIR] [--config-name NAME]
       [key=value ...]

  --print-config        print the resolved config (YAML) and exit
  --explain KEY         print what verl-cpp does with KEY (honoured / refused / no effect, and why), its value
                        and default, and exit; KEY may be a map (every key below it); repeatable
  --config-path DIR     directory of a YAML config (Hydra style; with --config-name)
  --config-name NAME    YAML file name in DIR (".yaml" optional)
  key=value             set a key          +key=value  add a new key
  ++key=value           set or add a key   ~key        delete a key
"""


def parse_args(argv: list[str], prog: str = "verl.trainer.main_ppo",
               base_config_name: str = "ppo_trainer") -> tuple[bool, str | None, list[str]]:
    """Splits argv into (print_config, yaml_path, overrides). Raises ConfigError on bad flags. ``prog`` names the
    command in the usage text; ``--config-name <base_config_name>`` means the embedded defaults (no file).
    Shared by the PPO and SFT entry points."""
    usage = USAGE.format(prog=prog)
    print_config, config_path, config_name, overrides = False, None, None, []
    args = list(argv)
    while args:
        arg = args.pop(0)
        flag, eq, value = arg.partition("=")
        if arg in ("-h", "--help"):
            print(usage)
            sys.exit(0)
        elif arg == "--print-config" or (flag == "--cfg" and value == "job") or arg == "--cfg" and args[:1] == ["job"]:
            print_config = True
            if arg == "--cfg":
                args.pop(0)
        elif flag in ("--config-path", "--config-name", "-cp", "-cn"):
            if not eq:
                if not args:
                    raise ConfigError(f"{flag} needs a value")
                value = args.pop(0)
            if flag in ("--config-path", "-cp"):
                config_path = value
            else:
                config_name = value
        elif arg.startswith("-") and not arg.startswith("~"):
            raise ConfigError(f"unknown option '{arg}'\n{usage}")
        else:
            overrides.append(arg)
    yaml_path = None
    if config_name is not None and config_name != base_config_name:
        name = config_name if config_name.endswith((".yaml", ".yml")) else config_name + ".yaml"
        yaml_path = os.path.join(config_path or ".", name)
    elif config_path is not None and config_name is None:
        raise ConfigError("--config-path needs --config-name")
    return print_config, yaml_path, overrides


def split_explain(argv: list[str]) -> tuple[list[str], list[str]]:
    """(the keys of every ``--explain KEY`` / ``--explain=KEY``, the other arguments). Raises ConfigError when
    ``--explain`` has no key. Shared by the PPO and SFT entry points."""
    keys, rest, args = [], [], list(argv)
    while args:
        arg = args.pop(0)
        if arg == "--explain":
            if not args:
                raise ConfigError("--explain needs a key (e.g. --explain actor_rollout_ref.model.use_liger)")
            keys.append(args.pop(0))
        elif arg.startswith("--explain="):
            keys.append(arg.partition("=")[2])
        else:
            rest.append(arg)
    return keys, rest


def explain_keys(keys: list[str], config: Config) -> str:
    """The ``--explain`` text of every key (see ``verl.config_keys.explain``)."""
    from ..config_keys import explain

    return "\n\n".join(explain(key, config) for key in keys) + "\n"


def run_ppo(config: Config) -> None:
    """verl's run_ppo: builds the trainer from the config (model, tokenizer, datasets, reward manager from
    ``reward.*`` / ``custom_reward_function``) and runs ``fit()``."""
    from .ppo_trainer import PPOTrainer

    trainer = PPOTrainer(config=config)
    trainer.fit()


def run_or_launch(config: Config, argv: list[str], module: str) -> int:
    """``run_ppo(config)`` in this process -- one process, or a rank torchrun started --, else (verl's one-command
    habit) the config's ranks started on this host through torch's elastic launcher, each running ``module`` with
    ``argv``: ``trainer.n_gpus_per_node`` of them, plus a one-step off-policy rollout pool's
    ``rollout.n_gpus_per_node``. Returns the exit status."""
    if "WORLD_SIZE" not in os.environ and distributed.expected_world_size(config) > 1:
        if int(config.get("trainer.nnodes")) > 1:
            raise ConfigError(f"trainer.nnodes={config.get('trainer.nnodes')}: a multi-node job starts on every node "
                              "with torchrun --nnodes <trainer.nnodes> --nproc_per_node <trainer.n_gpus_per_node> "
                              f"--rdzv-endpoint <host:port> -m {module} ...")
        if distributed.rollout_pool_size(config) and int(config.get("rollout.nnodes")) > 1:
            raise ConfigError(f"rollout.nnodes={config.get('rollout.nnodes')}: a rollout pool on other nodes starts "
                              "with torchrun on every node, the trainer's nodes first: a static rendezvous "
                              f"(--node_rank, --master_addr, --master_port) and -m {module} ...")
        ranks = distributed.expected_world_size(config)  # the whole layout checked first
        if str(config.get("trainer.device")).startswith("cuda"):
            import torch

            # (without CUDA the ranks train on the CPU, as one process does)
            if torch.cuda.is_available() and torch.cuda.device_count() < ranks:
                raise ConfigError(f"the config lays out {ranks} ranks (trainer.n_gpus_per_node"
                                  f"{' + rollout.n_gpus_per_node' if distributed.rollout_pool_size(config) else ''}) "
                                  f"but this host has {torch.cuda.device_count()} CUDA devices")
        return distributed.launch_local_workers(ranks, argv, module=module)
    run_ppo(config)
    return 0


def main(argv: list[str] | None = None) -> int:
    try:
        explain, args = split_explain(sys.argv[1:] if argv is None else argv)
        print_config, yaml_path, overrides = parse_args(args)
        config = load_config(yaml_path, overrides)
        if explain:
            sys.stdout.write(explain_keys(explain, config))
            return 0
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if print_config:
        sys.stdout.write(config.to_yaml())
        return 0
    try:
        return run_or_launch(config, sys.argv[1:] if argv is None else list(argv), "verl.trainer.main_ppo")
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
