"""python -m verl.trainer.main_ppo: verl's command line over the config tree."""

import subprocess
import sys

import yaml


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "verl.trainer.main_ppo", *args], capture_output=True, text=True)


def test_print_config_resolves_overrides():
    result = run("--print-config", "algorithm.adv_estimator=grpo", "data.max_prompt_length=256")
    assert result.returncode == 0, result.stderr
    tree = yaml.safe_load(result.stdout)
    assert tree["algorithm"]["adv_estimator"] == "grpo"
    assert tree["actor_rollout_ref"]["rollout"]["prompt_length"] == 256  # interpolation resolved


def test_unknown_key_exits_nonzero_naming_the_closest_key():
    result = run("--print-config", "actor_rollout_ref.rollout.nn=5")
    assert result.returncode != 0
    assert "actor_rollout_ref.rollout.n'" in result.stderr


def test_hydra_style_config_path_and_name(tmp_path):
    (tmp_path / "my_run.yaml").write_text("defaults:\n  - ppo_trainer\n  - _self_\nalgorithm:\n  gamma: 0.5\n")
    result = run("--config-path", str(tmp_path), "--config-name", "my_run", "--print-config")
    assert result.returncode == 0, result.stderr
    assert yaml.safe_load(result.stdout)["algorithm"]["gamma"] == 0.5


def test_training_says_plainly_it_is_not_available_yet():
    result = run("algorithm.adv_estimator=grpo")
    assert result.returncode != 0
    assert "not available yet" in result.stderr
