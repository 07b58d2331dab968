"""GRPO with reward_model.enable=True and no rule reward: the RM's score (a tiny transformers
Qwen2ForSequenceClassification checkpoint on the actor's tokenizer) is the reward, as in verl 0.9.1."""

from __future__ import annotations

import math

import pytest
import torch

import verl
from verl import PPOTrainer, RLConfig
from verl.workers import RewardModelWorker

from reward_model_checkpoint import write_rm_checkpoint
from trainer_helpers import toy_overrides


@pytest.fixture(scope="module")
def rm_dir(tmp_path_factory) -> str:
    return write_rm_checkpoint(str(tmp_path_factory.mktemp("tiny_rm")), seed=1)


def test_grpo_with_only_a_reward_model(tiny_model_dir, toy_data, rm_dir, tmp_path):
    cfg = RLConfig(overrides=[*toy_overrides(tiny_model_dir, str(tmp_path), "grpo", 2), "reward_model.enable=true",
                              f"reward_model.model.path={rm_dir}", "reward_model.micro_batch_size_per_gpu=5"])
    # no reward_fn and no custom_reward_function: the default rule scorer knows no 'toy' data source, so every
    # reward below comes from the reward model
    trainer = PPOTrainer(config=cfg, train_dataset=toy_data["train"])
    assert isinstance(trainer.rm_worker, RewardModelWorker)
    from verl.utils.dataset import create_rl_dataloader

    loader = create_rl_dataloader(trainer.train_dataset, trainer.config.data, train=True)
    metrics = [trainer.step(batch) for batch, _ in zip(loader, range(2))]
    assert [m["training/global_step"] for m in metrics] == [1, 2]
    for m in metrics:
        for key in ("critic/score/mean", "critic/score/max", "critic/score/min", "actor/pg_loss", "actor/grad_norm"):
            assert math.isfinite(m[key]), (key, m[key])
        assert m["critic/score/max"] > m["critic/score/min"]  # a real, varying score per response

    # the last step's token_level_scores are the RM's scores for exactly those responses
    last = trainer.last_batch
    expected = trainer.rm_worker.compute_rm_score(last).batch["rm_scores"]
    torch.testing.assert_close(last.batch["token_level_scores"], expected, rtol=0, atol=1e-6)
    assert metrics[-1]["critic/score/mean"] == pytest.approx(float(expected.sum(-1).mean()), abs=1e-5)


def test_a_reward_function_takes_precedence_over_the_reward_model(tiny_model_dir, toy_data, rm_dir, tmp_path):
    cfg = RLConfig(overrides=[*toy_overrides(tiny_model_dir, str(tmp_path), "grpo", 1), "reward_model.enable=true",
                              f"reward_model.model.path={rm_dir}"])
    trainer = PPOTrainer(config=cfg, reward_fn=lambda response: 1.0, train_dataset=toy_data["train"])
    assert trainer.rm_worker is None  # verl 0.9.1: a custom reward function is the reward


def test_enable_without_model_path_is_a_config_error(tiny_model_dir, toy_data, tmp_path):
    cfg = RLConfig(overrides=[*toy_overrides(tiny_model_dir, str(tmp_path), "grpo", 1), "reward_model.enable=true"])
    with pytest.raises(verl.ConfigError, match=r"reward_model\.model\.path"):
        PPOTrainer(config=cfg, train_dataset=toy_data["train"])
