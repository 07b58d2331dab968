"""The tutorials' YAML shape in ``RLConfig`` (issue 16, seed 001): ``model.name_or_path``, ``algorithm.name`` /
``algorithm.grpo.{num_generations, beta, clip_ratio}``, ``training.*``, ``generation.*``, ``reward.type`` land on
verl's keys; unknown keys are still refused, all of them named."""

from __future__ import annotations

import textwrap

import pytest

import verl
from verl import RLConfig

SEED_001 = textwrap.dedent("""
    model:
      name_or_path: /models/Qwen2.5-0.5B-Instruct
      torch_dtype: bfloat16
    algorithm:
      name: grpo
      grpo:
        num_generations: 8
        beta: 0.04
        clip_ratio: 0.2
    training:
      learning_rate: 1.0e-6
      batch_size: 16
      num_epochs: 3
      seed: 7
      output_dir: /tmp/ckpt
    generation:
      max_new_tokens: 256
      temperature: 0.9
      top_p: 0.95
    reward:
      type: function
""")


def test_seed_001_yaml_maps_onto_verl_keys(tmp_path):
    path = tmp_path / "grpo.yaml"
    path.write_text(SEED_001)
    cfg = RLConfig(str(path)).to_config()
    actor = "actor_rollout_ref.actor"
    expected = {
        "actor_rollout_ref.model.path": "/models/Qwen2.5-0.5B-Instruct",
        "critic.model.path": "/models/Qwen2.5-0.5B-Instruct",
        f"{actor}.fsdp_config.model_dtype": "bf16",
        "algorithm.adv_estimator": "grpo",
        "actor_rollout_ref.rollout.n": 8,
        f"{actor}.use_kl_loss": True,
        f"{actor}.kl_loss_coef": 0.04,
        f"{actor}.clip_ratio": 0.2, f"{actor}.clip_ratio_low": 0.2, f"{actor}.clip_ratio_high": 0.2,
        f"{actor}.optim.lr": 1e-6,
        "data.train_batch_size": 16,
        "trainer.total_epochs": 3,
        "data.seed": 7, "actor_rollout_ref.rollout.seed": 7,
        "trainer.default_local_dir": "/tmp/ckpt",
        "data.max_response_length": 256,
        "actor_rollout_ref.rollout.temperature": 0.9,
        "actor_rollout_ref.rollout.top_p": 0.95,
        "reward.reward_manager.name": "naive",
    }
    assert {key: cfg[key] for key in expected} == expected
    assert RLConfig.from_yaml(path) == RLConfig(path)


def test_dict_form_with_verl_sections_beside_it():
    cfg = RLConfig({"model": {"name_or_path": "/m"}, "algorithm": {"name": "ppo", "ppo": {"gamma": 0.99, "lam": 0.9},
                                                                   "kl_ctrl": {"kl_coef": 0.002}},
                    "generation": {"max_prompt_length": 64, "do_sample": False},
                    "trainer": {"save_freq": 5}, "n": 2}).to_config()
    assert cfg["algorithm.adv_estimator"] == "gae"  # PPO: verl's GAE with a critic
    assert (cfg["algorithm.gamma"], cfg["algorithm.lam"], cfg["algorithm.kl_ctrl.kl_coef"]) == (0.99, 0.9, 0.002)
    assert cfg["data.max_prompt_length"] == 64 and cfg["actor_rollout_ref.rollout.do_sample"] is False
    assert cfg["trainer.save_freq"] == 5 and cfg["actor_rollout_ref.rollout.n"] == 2


def test_beta_zero_turns_the_kl_loss_off():
    cfg = RLConfig({"algorithm": {"name": "grpo", "grpo": {"beta": 0.0}}}).to_config()
    assert cfg["actor_rollout_ref.actor.use_kl_loss"] is False


def test_unknown_tutorial_keys_are_all_named():
    with pytest.raises(verl.ConfigError) as info:
        RLConfig({"model": {"name_or_path": "/m", "revision": "main"}, "algorithm": {"name": "grpo", "grpo": {
            "num_generation": 4}}, "training": {"learning_rat": 1e-5}, "generation": {"max_new_tokens": 8}})
    message = str(info.value)
    assert "model.revision" in message
    assert "algorithm.grpo.num_generation (did you mean algorithm.grpo.num_generations?)" in message
    assert "training.learning_rat (did you mean training.learning_rate?)" in message
    assert "max_new_tokens" not in message


@pytest.mark.parametrize("data, match", [
    ({"algorithm": {"name": "grpo", "gama": 0.9}}, "algorithm.gama"),  # verl's own keys: checked by the tree
    ({"algorithm": {"name": ""}}, "algorithm.name must be a non-empty string"),
    ({"reward": {"type": "oracle"}}, "reward.type='oracle' is not one of"),
    ({"training": [1, 2]}, "'training' must be a mapping"),
    ({"model": {"name_or_path": "/m", "torch_dtype": "int8"}}, "model.torch_dtype='int8'"),
    ({"generation": {"temperature": -1.0}}, "temperature"),
])
def test_bad_values_are_config_errors(data, match):
    with pytest.raises(verl.ConfigError, match=match):
        RLConfig(data)


def test_plain_verl_sections_are_not_the_tutorial_shape():
    cfg = RLConfig({"algorithm": {"adv_estimator": "rloo"}, "reward": {"num_workers": 2}}).to_config()
    assert cfg["algorithm.adv_estimator"] == "rloo" and cfg["reward.num_workers"] == 2


@pytest.mark.parametrize("name", ["sppo", "grpo_vectorized", "my_registered_estimator"])
def test_other_algorithm_names_are_verl_estimator_names(name):
    # as RLConfig(algorithm=...): only the tutorials' names are mapped, the trainer checks the rest against the
    # estimator registry when it starts (tests/python/trainer/test_seed_snippets.py)
    assert RLConfig({"algorithm": {"name": name}}).to_config()["algorithm.adv_estimator"] == name
    assert RLConfig(algorithm=name).to_config()["algorithm.adv_estimator"] == name
