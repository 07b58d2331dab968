"""verl's one-step off-policy trainer through the Python API and verl's command line: ``fit()`` with
``actor_rollout_ref.hybrid_engine=False`` overlaps generation with the update (batch N+1 from the weights after step
N-1), checkpoints resume at the first batch not trained on, and errors in the rollout thread reach the caller."""

import json
import os
import shutil
import subprocess
import sys

import pytest
import torch

import verl
from trainer_helpers import toy_overrides
from verl import PPOTrainer, RLConfig

MODULE = "verl.experimental.one_step_off_policy.main_ppo"


def one_step_trainer(model_dir, out_dir, toy_data, steps, *extra, reward_fn=None):
    overrides = [*toy_overrides(model_dir, str(out_dir), "grpo", steps), "actor_rollout_ref.hybrid_engine=False",
                 f"data.train_files={toy_data['train']}", f"data.val_files={toy_data['test']}", *extra]
    # varies over the tiny random model's samples, so GRPO's advantages (and the updates) are not zero
    reward = reward_fn or (lambda response: sum(map(ord, response)) % 7 / 7)
    return PPOTrainer(config=RLConfig(overrides=overrides), reward_fn=reward)


def logged(out_dir):
    with open(os.path.join(out_dir, "proj", "exp.jsonl")) as f:
        return [json.loads(line)["data"] for line in f]


def test_fit_overlaps_generation_one_step_stale(tiny_model_dir, toy_data, tmp_path, monkeypatch):
    monkeypatch.setenv("VERL_FILE_LOGGER_ROOT", str(tmp_path))
    # the staleness corrected by verl's token-level importance weights (decoupled: old_log_prob recomputed)
    trainer = one_step_trainer(tiny_model_dir, tmp_path, toy_data, 3, "trainer.test_freq=2",
                               "algorithm.rollout_correction.rollout_is=token")
    trainer.fit()
    assert trainer.global_steps == 3
    rows = [r for r in logged(tmp_path) if "training/global_step" in r]
    assert [r["training/global_step"] for r in rows] == [1, 2, 3]
    for row in rows:
        for key in ("timing_s/gen", "timing_s/generate_async", "timing_s/reward_async", "timing_s/update_actor",
                    "timing_s/step"):
            assert key in row, key
    # the weights go to the rollout before each next batch; the last step submits none
    assert ["timing_s/sync_rollout_weights" in row for row in rows] == [True, True, False]
    # the first batch comes from the weights it trains, the next ones from one update earlier
    assert rows[0]["training/rollout_probs_diff_max"] < 1e-4
    assert rows[1]["training/rollout_probs_diff_max"] > 1e-4
    assert rows[0]["rollout_corr/rollout_is_mean"] == pytest.approx(1.0, abs=1e-4)
    assert rows[1]["rollout_corr/rollout_is_mean"] != pytest.approx(1.0, abs=1e-6)
    assert any(k.startswith("val-core/") for k in rows[1])  # validated after step 2, the batch in flight waited for
    assert not trainer._trainer.rollouts_in_flight


def test_checkpoint_resumes_at_the_batch_in_flight(tiny_model_dir, toy_data, tmp_path, monkeypatch):
    """A checkpoint written while batch 3 is in flight resumes with batch 3: the resumed step trains on the prompts the
    uninterrupted run trained on."""
    monkeypatch.setenv("VERL_FILE_LOGGER_ROOT", str(tmp_path))
    first = one_step_trainer(tiny_model_dir, tmp_path / "a", toy_data, 3, "trainer.save_freq=2", "trainer.test_freq=0")
    first.fit()
    want = first.last_batch.batch["prompts"]
    saved = tmp_path / "a" / "ckpt" / "global_step_2"
    assert saved.is_dir()
    shutil.copytree(saved, tmp_path / "b" / "ckpt" / "global_step_2")
    (tmp_path / "b" / "ckpt" / "latest_checkpointed_iteration.txt").write_text("2")
    resumed = one_step_trainer(tiny_model_dir, tmp_path / "b", toy_data, 3, "trainer.save_freq=0",
                               "trainer.test_freq=0")
    resumed.fit()
    assert resumed.global_steps == 3
    got = resumed.last_batch.batch["prompts"]
    assert sorted(map(tuple, got.tolist())) == sorted(map(tuple, want.tolist()))


def test_submit_and_wait_from_python(tiny_model_dir, toy_data, tmp_path, monkeypatch):
    monkeypatch.setenv("VERL_FILE_LOGGER_ROOT", str(tmp_path))
    calls = []

    def reward(response):
        calls.append(response)
        if len(calls) == 1:
            raise ValueError("reward server said no")
        return 1.0

    trainer = one_step_trainer(tiny_model_dir, tmp_path, toy_data, 2, reward_fn=reward)
    trainer.submit_rollouts()
    with pytest.raises(verl.errors.RewardError, match="reward server said no"):  # naming the sample
        trainer.wait_rollouts()
    trainer.submit_rollouts()
    with pytest.raises(verl.errors.InvalidArgumentError, match="wait_rollouts"):
        trainer.validate()
    batch = trainer.wait_rollouts()
    assert torch.all(batch.batch["token_level_scores"].sum(-1) == 1.0)
    trainer.submit_rollouts()
    metrics = trainer.optimize(batch)  # trains while the next batch generates
    assert metrics["training/global_step"] == 1
    assert trainer.wait_rollouts().batch["responses"].shape[0] == 16
    hybrid = PPOTrainer(config=RLConfig(overrides=toy_overrides(tiny_model_dir, str(tmp_path), "grpo", 1)),
                        reward_fn=lambda response: 1.0, train_dataset=toy_data["train"])
    with pytest.raises(verl.ConfigError, match="hybrid_engine"):
        hybrid.submit_rollouts()


def run_cli(*args, cwd=None):
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.abspath(verl.__file__)))}
    return subprocess.run([sys.executable, "-m", MODULE, *args], capture_output=True, text=True, cwd=cwd, env=env)


def test_cli_config_is_verls_one_step_config(tiny_model_dir, tmp_path):
    import yaml

    result = run_cli("--print-config", "actor_rollout_ref.hybrid_engine=False")
    assert result.returncode == 0, result.stderr
    tree = yaml.safe_load(result.stdout)
    assert tree["rollout"] == {"nnodes": 1, "n_gpus_per_node": 0}  # verl's 8: a pool of ranks of its own
    assert tree["algorithm"]["rollout_correction"]["bypass_mode"] is True
    assert tree["actor_rollout_ref"]["rollout"]["free_cache_engine"] is False
    refused = run_cli("trainer.device=cpu")
    assert refused.returncode == 2 and "actor_rollout_ref.hybrid_engine" in refused.stderr
    refused = run_cli(*toy_overrides(tiny_model_dir, str(tmp_path), "grpo", 1), "actor_rollout_ref.hybrid_engine=False",
                      "rollout.nnodes=2", "rollout.n_gpus_per_node=1", cwd=tmp_path)
    assert refused.returncode == 2 and "rollout.nnodes" in refused.stderr
    refused = run_cli("actor_rollout_ref.hybrid_engine=False", "trainer.n_gpus_per_node=2")
    assert refused.returncode == 2 and "trainer.n_gpus_per_node" in refused.stderr


def test_cli_trains(tiny_model_dir, toy_data, tmp_path):
    scorer = tmp_path / "score.py"
    scorer.write_text("def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n"
                      "    return float(solution_str.strip() == ground_truth)\n")
    result = run_cli(*toy_overrides(tiny_model_dir, str(tmp_path), "grpo", 2), "actor_rollout_ref.hybrid_engine=False",
                     f"data.train_files={toy_data['train']}", f"custom_reward_function.path={scorer}",
                     "custom_reward_function.name=compute_score", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    rows = (tmp_path / "proj" / "exp.jsonl").read_text().splitlines()
    assert len(rows) == 2
    assert "timing_s/generate_async" in json.loads(rows[1])["data"]


def test_agent_loops_generate_on_the_rollout_thread(tiny_model_dir, toy_data, tmp_path, monkeypatch):
    """The agent loops (asyncio over the rollout engine) run on the rollout thread as the engine's one-shot generation
    does: single_turn_agent gives the same batches bit for bit."""
    monkeypatch.setenv("VERL_FILE_LOGGER_ROOT", str(tmp_path))
    plain = one_step_trainer(tiny_model_dir, tmp_path / "plain", toy_data, 3, "trainer.test_freq=0")
    agent = one_step_trainer(tiny_model_dir, tmp_path / "agent", toy_data, 3, "trainer.test_freq=0",
                             "actor_rollout_ref.rollout.multi_turn.enable=true")
    plain.fit()
    agent.fit()
    a, b = plain.last_batch, agent.last_batch
    for key in ("prompts", "responses", "response_mask", "rollout_log_probs", "token_level_scores", "advantages"):
        assert torch.equal(a.batch[key], b.batch[key]), key
    assert b.non_tensor_batch["__num_turns__"].tolist() == [2] * 16
    for name, tensor in plain.model.state_dict().items():
        assert torch.equal(tensor, agent.model.state_dict()[name]), name
