"""GRPO with reward_model.enable=True and no rule reward: the RM's score (a tiny transformers
Qwen2ForSequenceClassification checkpoint on the actor's tokenizer) is the reward, as in verl 0.9.1."""

from __future__ import annotations

import json
import math
import os
import shutil

import pytest
import torch

import verl
from verl import PPOTrainer, RLConfig
from verl.workers import RewardModelWorker

from trainer_helpers import TOKENIZER_DIR, toy_overrides


@pytest.fixture(scope="module")
def rm_dir(tmp_path_factory) -> str:
    transformers = pytest.importorskip("transformers")
    path = str(tmp_path_factory.mktemp("tiny_rm"))
    with open(os.path.join(TOKENIZER_DIR, "tokenizer.json"), encoding="utf-8") as f:
        added = {t["content"]: t["id"] for t in json.load(f)["added_tokens"]}
    config = transformers.Qwen2Config(vocab_size=304, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                                      num_labels=1, pad_token_id=added["<|endoftext|>"])
    torch.manual_seed(1)
    model = transformers.Qwen2ForSequenceClassification(config).to(torch.float32)
    with torch.no_grad():
        model.score.weight.normal_(0.0, 1.0)
    model.save_pretrained(path)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(TOKENIZER_DIR, name), os.path.join(path, name))
    return path


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
