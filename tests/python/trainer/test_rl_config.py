"""RLConfig: short names onto verl's keys, layers (base, short names, overrides), dict / YAML input, errors."""

from __future__ import annotations

import pytest

import verl
from verl import RLConfig
from verl.trainer.rl_config import SHORT_NAMES


def test_short_names_map_onto_verl_keys():
    tree = RLConfig(algorithm="grpo", batch_size=8, learning_rate=1e-5, clip_epsilon=0.28, n=4, max_prompt_length=64,
                    max_response_length=32, model="/models/tiny", temperature=0.7, kl_coef=0.02, use_kl_loss=True,
                    entropy_coeff=0.001, epochs=2, total_steps=10, seed=3, device="cpu", save_freq=5, test_freq=2,
                    output_dir="/tmp/run").to_config()
    actor = tree.actor_rollout_ref.actor
    assert tree.algorithm.adv_estimator == "grpo"
    assert tree.data.train_batch_size == 8
    assert actor.optim.lr == 1e-5
    assert (actor.clip_ratio, actor.clip_ratio_low, actor.clip_ratio_high) == (0.28, 0.28, 0.28)
    assert tree.actor_rollout_ref.rollout.n == 4
    assert tree.data.max_prompt_length == 64 and tree.data.max_response_length == 32
    assert tree.actor_rollout_ref.rollout.prompt_length == 64  # verl's interpolation follows
    assert tree.actor_rollout_ref.model.path == "/models/tiny" and tree.critic.model.path == "/models/tiny"
    assert tree.actor_rollout_ref.rollout.temperature == 0.7
    assert actor.kl_loss_coef == 0.02 and tree.algorithm.kl_ctrl.kl_coef == 0.02 and actor.use_kl_loss is True
    assert actor.entropy_coeff == 0.001
    assert tree.trainer.total_epochs == 2 and tree.trainer.total_training_steps == 10
    assert tree.data.seed == 3 and actor.data_loader_seed == 3 and tree.actor_rollout_ref.rollout.seed == 3
    assert tree.trainer.device == "cpu" and tree.trainer.save_freq == 5 and tree.trainer.test_freq == 2
    assert tree.trainer.default_local_dir == "/tmp/run"


def test_every_short_name_targets_an_existing_key():
    tree = verl.load_config()
    assert [key for keys in SHORT_NAMES.values() for key in keys if key not in tree] == []


def test_overrides_win_and_clip_higher():
    cfg = RLConfig(clip_epsilon=0.2, clip_epsilon_high=0.28, n=4,
                   overrides=["actor_rollout_ref.rollout.n=16", "+trainer.my_note=hello"])
    tree = cfg.to_config()
    assert tree.actor_rollout_ref.rollout.n == 16 and tree.trainer.my_note == "hello"
    assert tree.actor_rollout_ref.actor.clip_ratio_low == 0.2 and tree.actor_rollout_ref.actor.clip_ratio_high == 0.28
    assert cfg.n == 4  # the short name as given
    assert cfg.gamma == 1.0  # unset: verl's default, read from the tree
    assert cfg.replace(n=2).to_config().actor_rollout_ref.rollout.n == 16  # overrides kept by replace
    assert cfg.replace(n=2, overrides=[]).to_config().actor_rollout_ref.rollout.n == 2


def test_unknown_short_name_suggests_the_closest():
    with pytest.raises(verl.ConfigError, match="unknown setting 'learnig_rate'; did you mean 'learning_rate'"):
        RLConfig(learnig_rate=1e-6)
    with pytest.raises(verl.ConfigError, match="did you mean 'clip_epsilon'"):
        RLConfig(clip_eps=0.2)
    with pytest.raises(AttributeError, match="did you mean 'temperature'"):
        RLConfig().temperatur  # noqa: B018


def test_bad_values_and_verl_keys_fail_at_construction():
    with pytest.raises(verl.ConfigTypeError, match="data.train_batch_size"):
        RLConfig(batch_size="many")
    with pytest.raises(verl.ConfigError, match="did you mean 'actor_rollout_ref.rollout.n'"):
        RLConfig(overrides=["actor_rollout_ref.rollout.nn=2"])
    with pytest.raises(verl.ConfigError, match="list of 'key=value'"):
        RLConfig(overrides="data.seed=1")


def test_from_dict_mixes_short_names_sections_and_dotted_keys():
    cfg = RLConfig.from_dict({
        "algorithm": "rloo",  # short name (a string)
        "trainer": {"save_freq": 7, "logger": ["console"]},  # verl section (a mapping)
        "data.shuffle": False,
        "n": 3,
        "data": {"apply_chat_template_kwargs": {"enable_thinking": False}},  # free-form node set whole
        "overrides": ["trainer.test_freq=9"],
    })
    tree = cfg.to_config()
    assert tree.algorithm.adv_estimator == "rloo" and tree.trainer.save_freq == 7
    assert tree.trainer.logger == ["console"] and tree.data.shuffle is False
    assert tree.data.apply_chat_template_kwargs == {"enable_thinking": False}
    assert tree.actor_rollout_ref.rollout.n == 3 and tree.trainer.test_freq == 9
    with pytest.raises(verl.ConfigError, match="did you mean 'trainer'"):
        RLConfig.from_dict({"trainr": {"save_freq": 1}})
    with pytest.raises(verl.ConfigError, match="unknown config key 'trainer.save_frq'"):
        RLConfig.from_dict({"trainer": {"save_frq": 1}})


def test_from_yaml_short_names_and_verl_files(tmp_path):
    short = tmp_path / "short.yaml"
    short.write_text("algorithm: grpo\nbatch_size: 16\nlearning_rate: 2.0e-6\noverrides:\n  - trainer.save_freq=4\n")
    tree = RLConfig.from_yaml(short).to_config()
    assert tree.algorithm.adv_estimator == "grpo" and tree.data.train_batch_size == 16
    assert tree.actor_rollout_ref.actor.optim.lr == 2e-6 and tree.trainer.save_freq == 4

    verl_file = tmp_path / "verl.yaml"
    verl_file.write_text("algorithm:\n  adv_estimator: reinforce_plus_plus\ndata:\n  train_batch_size: 4\n")
    cfg = RLConfig(verl_file, n=2)
    tree = cfg.to_config()
    assert tree.algorithm.adv_estimator == "reinforce_plus_plus" and tree.data.train_batch_size == 4
    assert tree.actor_rollout_ref.rollout.n == 2

    bad = tmp_path / "bad.yaml"
    bad.write_text("data:\n  train_batch_sise: 4\n")
    with pytest.raises(verl.ConfigError, match="train_batch_size"):
        RLConfig(bad)
    with pytest.raises(verl.ConfigError, match="not found"):
        RLConfig(tmp_path / "missing.yaml")


def test_from_a_verl_config_and_equality():
    base = verl.load_config(overrides=["algorithm.gamma=0.9"])
    cfg = RLConfig(base, lam=0.8)
    tree = cfg.to_config()
    assert tree.algorithm.gamma == 0.9 and tree.algorithm.lam == 0.8
    assert base.algorithm.lam == 1.0  # the base is not modified
    assert RLConfig(n=2) == RLConfig(overrides=["actor_rollout_ref.rollout.n=2"]) and RLConfig(n=2) != RLConfig(n=3)
    assert "n=2" in repr(RLConfig(n=2))


def test_attribute_assignment_sets_short_names():
    cfg = RLConfig(n=2)
    cfg.n = 8
    cfg.temperature = 0.5
    tree = cfg.to_config()
    assert tree.actor_rollout_ref.rollout.n == 8 and tree.actor_rollout_ref.rollout.temperature == 0.5
    with pytest.raises(verl.ConfigTypeError):
        cfg.n = "eight"
    assert cfg.n == 8  # unchanged after the failed assignment
    with pytest.raises(verl.ConfigError, match="did you mean 'temperature'"):
        cfg.temprature = 1.0


def test_ppo_is_gae_with_a_critic():
    # the tutorials' algorithm names, from the one table the tutorial YAML's algorithm.name uses (issue 40)
    cfg = RLConfig(algorithm="ppo", batch_size=32, learning_rate=5e-5, clip_epsilon=0.2)
    tree = cfg.to_config()
    assert tree.algorithm.adv_estimator == "gae" and tree.critic.enable is None  # null: a critic exactly for GAE
    assert cfg.algorithm == "ppo"  # the short name reads back as given
    assert RLConfig(algorithm="reinforce++").to_config().algorithm.adv_estimator == "reinforce_plus_plus"
    assert cfg.replace(algorithm="grpo").to_config().algorithm.adv_estimator == "grpo"
    assert RLConfig(adv_estimator="ppo").to_config().algorithm.adv_estimator == "ppo"  # verl's key, as it is


def test_derived_update_micro_batch_divides_each_ranks_share():
    # issue 40, found on the real SmolLM2-135M under torchrun with the defaults: 4 prompts x n=2 on 2 ranks is 4
    # trajectories per rank, and the micro-batch derived from the whole mini-batch (8) did not divide them
    from verl.trainer.batch_defaults import fill_batch_defaults

    for ranks, micro in ((1, 8), (2, 4), (4, 2)):
        cfg = verl.load_config(overrides=["data.train_batch_size=4", "actor_rollout_ref.actor.ppo_mini_batch_size=4",
                                          "actor_rollout_ref.rollout.n=2", f"trainer.n_gpus_per_node={ranks}",
                                          "data.max_prompt_length=64", "data.max_response_length=16"])
        fill_batch_defaults(cfg)
        assert cfg["actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"] == micro, ranks
        assert cfg["critic.ppo_micro_batch_size_per_gpu"] == micro, ranks
