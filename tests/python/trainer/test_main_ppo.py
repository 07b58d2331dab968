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


def test_cli_trains_with_verl_keys(tiny_model_dir, toy_data, tmp_path):
    """A two-step GRPO run from the command line: data files, a custom reward function file, the JSONL log."""
    from trainer_helpers import toy_overrides

    scorer = tmp_path / "score.py"
    scorer.write_text("def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n"
                      "    return float(solution_str.strip() == ground_truth)\n")
    overrides = [*toy_overrides(tiny_model_dir, str(tmp_path), "grpo", 2), f"data.train_files={toy_data['train']}",
                 f"data.val_files={toy_data['test']}", f"custom_reward_function.path={scorer}",
                 "custom_reward_function.name=compute_score"]
    import os

    import verl

    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.abspath(verl.__file__)))}
    result = subprocess.run([sys.executable, "-m", "verl.trainer.main_ppo", *overrides], capture_output=True, text=True,
                            cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    lines = (tmp_path / "proj" / "exp.jsonl").read_text().splitlines()
    assert len(lines) == 2


def test_cli_missing_model_is_a_config_error(tmp_path):
    result = run(f"actor_rollout_ref.model.path={tmp_path}/nope", "trainer.device=cpu")
    assert result.returncode == 2
    assert "actor_rollout_ref.model.path" in result.stderr
