"""No silent keys for keys added with +key=...: verl (Hydra) accepts any added key, and its code or a backend may
read it; verl-cpp's PPO trainer refuses one that nothing here reads, naming it, instead of ignoring it."""

from __future__ import annotations

import pytest

import verl
from trainer_helpers import toy_overrides


def make(tiny_model_dir, tmp_path, *extra):
    return verl.PPOTrainer(config=verl.RLConfig(overrides=[*toy_overrides(tiny_model_dir, str(tmp_path)), *extra]),
                           reward_fn=lambda response: 0.0)


def test_an_added_key_nothing_reads_is_refused(tiny_model_dir, tmp_path):
    with pytest.raises(verl.ConfigError, match=r"'trainer\.my_note' was added with \+key=\.\.\. but verl-cpp reads"):
        make(tiny_model_dir, tmp_path, "+trainer.my_note=hello")
    with pytest.raises(verl.ConfigError, match=r"'actor_rollout_ref\.actor\.megatron\.tp' \(also data\.extra\)"):
        make(tiny_model_dir, tmp_path, "+actor_rollout_ref.actor.megatron.tp=2", "+data.extra=1")
    # A Config alone may hold any keys (user metadata, a config shared with other tools).
    assert verl.load_config(overrides=["+trainer.my_note=hello"]).trainer.my_note == "hello"


def test_added_keys_verl_reads_pass(tiny_model_dir, tmp_path):
    trainer = make(tiny_model_dir, tmp_path, "algorithm.adv_estimator=gdpo", "+algorithm.gdpo_reward_keys=[a,b]")
    assert trainer.config.get("algorithm.gdpo_reward_keys") == ["a", "b"]
