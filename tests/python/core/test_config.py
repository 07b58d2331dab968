"""verl's config tree from Python: defaults equal verl's, overrides, validation, attribute access."""

import pytest

import verl
from verl import load_config

# Values read from verl 0.9.1's verl/trainer/config/_generated_ppo_trainer.yaml (the reference).
VERL_DEFAULTS = {
    "data.train_batch_size": 1024,
    "data.max_prompt_length": 512,
    "data.max_response_length": 512,
    "data.prompt_key": "prompt",
    "data.reward_fn_key": "data_source",
    "data.shuffle": True,
    "data.truncation": "error",
    "data.return_raw_chat": True,
    "data.gen_batch_size": None,
    "actor_rollout_ref.hybrid_engine": True,
    "actor_rollout_ref.model.enable_gradient_checkpointing": True,
    "actor_rollout_ref.model.use_remove_padding": True,
    "actor_rollout_ref.model.lora_rank": 0,
    "actor_rollout_ref.actor.strategy": "fsdp",
    "actor_rollout_ref.actor.ppo_mini_batch_size": 256,
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": None,
    "actor_rollout_ref.actor.use_dynamic_bsz": False,
    "actor_rollout_ref.actor.ppo_max_token_len_per_gpu": 16384,
    "actor_rollout_ref.actor.clip_ratio": 0.2,
    "actor_rollout_ref.actor.clip_ratio_low": 0.2,
    "actor_rollout_ref.actor.clip_ratio_high": 0.2,
    "actor_rollout_ref.actor.clip_ratio_c": 3.0,
    "actor_rollout_ref.actor.loss_agg_mode": "token-mean",
    "actor_rollout_ref.actor.entropy_coeff": 0,
    "actor_rollout_ref.actor.use_kl_loss": False,
    "actor_rollout_ref.actor.kl_loss_coef": 0.001,
    "actor_rollout_ref.actor.kl_loss_type": "low_var_kl",
    "actor_rollout_ref.actor.ppo_epochs": 1,
    "actor_rollout_ref.actor.shuffle": False,
    "actor_rollout_ref.actor.grad_clip": 1.0,
    "actor_rollout_ref.actor.policy_loss.loss_mode": "vanilla",
    "actor_rollout_ref.actor.policy_loss.clip_cov_ratio": 0.0002,
    "actor_rollout_ref.actor.policy_loss.kl_cov_ratio": 0.0002,
    "actor_rollout_ref.actor.optim.lr": 1e-6,
    "actor_rollout_ref.actor.optim.weight_decay": 0.01,
    "actor_rollout_ref.actor.optim.betas": [0.9, 0.999],
    "actor_rollout_ref.actor.optim.lr_warmup_steps": -1,
    "actor_rollout_ref.actor.optim.lr_warmup_steps_ratio": 0.0,
    "actor_rollout_ref.actor.optim.lr_scheduler_type": "constant",
    "actor_rollout_ref.actor.optim.min_lr_ratio": 0.0,
    "actor_rollout_ref.actor.optim.num_cycles": 0.5,
    "actor_rollout_ref.actor.checkpoint.save_contents": ["model", "optimizer", "extra"],
    "actor_rollout_ref.rollout.mode": "async",
    "actor_rollout_ref.rollout.temperature": 1.0,
    "actor_rollout_ref.rollout.top_k": -1,
    "actor_rollout_ref.rollout.top_p": 1,
    "actor_rollout_ref.rollout.n": 1,
    "actor_rollout_ref.rollout.dtype": "auto",  # verl: bfloat16 (the YAML's header lists the deviations)
    "actor_rollout_ref.rollout.gpu_memory_utilization": 0.5,
    "actor_rollout_ref.rollout.max_num_batched_tokens": 8192,
    "actor_rollout_ref.rollout.max_num_seqs": 256,
    "actor_rollout_ref.rollout.enable_chunked_prefill": True,
    "actor_rollout_ref.rollout.do_sample": True,
    "actor_rollout_ref.rollout.calculate_log_probs": True,
    "actor_rollout_ref.rollout.val_kwargs.temperature": 0,
    "actor_rollout_ref.rollout.val_kwargs.n": 1,
    "actor_rollout_ref.rollout.val_kwargs.do_sample": False,
    "actor_rollout_ref.rollout.prompt_length": 512,
    "actor_rollout_ref.rollout.response_length": 512,
    "critic.optim.lr": 1e-5,
    "critic.cliprange_value": 0.5,
    "critic.ppo_max_token_len_per_gpu": 32768,
    "critic.ppo_mini_batch_size": 256,
    "critic.loss_agg_mode": "token-mean",
    "critic.model.path": "~/models/deepseek-llm-7b-chat",
    "reward_model.enable": None,
    "custom_reward_function.path": None,
    "reward.reward_manager.name": "naive",
    "reward.custom_reward_function.name": "compute_score",
    "algorithm.gamma": 1.0,
    "algorithm.lam": 1.0,
    "algorithm.adv_estimator": "gae",
    "algorithm.norm_adv_by_std_in_grpo": True,
    "algorithm.use_kl_in_reward": False,
    "algorithm.kl_penalty": "kl",
    "algorithm.kl_ctrl.type": "fixed",
    "algorithm.kl_ctrl.kl_coef": 0.001,
    "algorithm.kl_ctrl.horizon": 10000,
    "algorithm.kl_ctrl.target_kl": 0.1,
    "algorithm.filter_groups.enable": False,
    "algorithm.filter_groups.metric": "reward",
    "algorithm.filter_groups.max_num_gen_batches": 0,
    "trainer.total_epochs": 30,
    "trainer.total_training_steps": None,
    "trainer.project_name": "verl_examples",
    "trainer.experiment_name": "gsm8k",
    "trainer.logger": ["console", "wandb"],
    "trainer.nnodes": 1,
    "trainer.n_gpus_per_node": 1,  # verl: 8; verl-cpp runs one process (the YAML's header lists the deviations)
    "trainer.save_freq": -1,
    "trainer.test_freq": -1,
    "trainer.resume_mode": "auto",
    "trainer.val_before_train": True,
    "trainer.critic_warmup": 0,
    "trainer.default_local_dir": "checkpoints/verl_examples/gsm8k",
    "trainer.max_actor_ckpt_to_keep": None,
    "trainer.device": "cuda",
}


def test_defaults_equal_verls():
    cfg = verl.Config()
    assert len(VERL_DEFAULTS) >= 40
    mismatches = {k: (cfg[k], v) for k, v in VERL_DEFAULTS.items() if cfg[k] != v or type(cfg[k]) is not type(v)}
    assert mismatches == {}


def test_attribute_dict_and_dotted_access():
    cfg = load_config(overrides=["actor_rollout_ref.rollout.n=8"])
    assert cfg.actor_rollout_ref.rollout.n == 8
    assert cfg["actor_rollout_ref"]["rollout"]["n"] == 8
    assert cfg["actor_rollout_ref.rollout.n"] == 8
    assert "rollout" in cfg.actor_rollout_ref and "nope" not in cfg.actor_rollout_ref
    assert cfg.get("algorithm.nope", 5) == 5
    assert set(cfg.algorithm.kl_ctrl) == {"type", "kl_coef", "horizon", "target_kl"}
    assert cfg.algorithm.to_dict()["gamma"] == 1.0


def test_assignment_is_type_checked_and_writes_through():
    cfg = verl.Config()
    cfg.algorithm.gamma = 0.99
    assert cfg["algorithm.gamma"] == 0.99
    rollout = cfg.actor_rollout_ref.rollout
    rollout.temperature = 0.7
    assert cfg.actor_rollout_ref.rollout.temperature == 0.7
    with pytest.raises(verl.ConfigTypeError, match="actor_rollout_ref.rollout.n"):
        rollout.n = "eight"
    with pytest.raises(TypeError):  # ConfigTypeError is a TypeError too
        rollout.n = 2.5
    with pytest.raises(verl.ConfigError, match="did you mean 'actor_rollout_ref.rollout.top_k'"):
        rollout.top_kk = 3


@pytest.mark.parametrize(
    "override, key, expected",
    [
        ("actor_rollout_ref.rollout.n=16", "actor_rollout_ref.rollout.n", 16),
        ("actor_rollout_ref.actor.optim.lr=1e-5", "actor_rollout_ref.actor.optim.lr", 1e-5),
        ("actor_rollout_ref.actor.use_kl_loss=True", "actor_rollout_ref.actor.use_kl_loss", True),
        ("algorithm.adv_estimator=grpo", "algorithm.adv_estimator", "grpo"),
        ("data.gen_batch_size=null", "data.gen_batch_size", None),
        ("trainer.logger=['console','tensorboard']", "trainer.logger", ["console", "tensorboard"]),
        ("trainer.experiment_name=42", "trainer.experiment_name", "42"),
        ("+trainer.extra={a: 1, b: [x]}", "trainer.extra", {"a": 1, "b": ["x"]}),
        ("data.max_prompt_length=1024", "actor_rollout_ref.rollout.prompt_length", 1024),
    ],
)
def test_override_value_types(override, key, expected):
    assert load_config(overrides=[override])[key] == expected


def test_wrong_type_and_range_errors_name_key_and_value():
    with pytest.raises(verl.ConfigTypeError, match=r"actor_rollout_ref\.rollout\.n.*\"abc\""):
        load_config(overrides=["actor_rollout_ref.rollout.n=abc"])
    with pytest.raises(verl.ConfigError, match=r"actor_rollout_ref\.rollout\.top_p.*1\.5"):
        load_config(overrides=["actor_rollout_ref.rollout.top_p=1.5"])
    with pytest.raises(ValueError, match=r"trainer\.resume_mode"):
        load_config(overrides=["trainer.resume_mode=sometimes"])


def test_unknown_key_suggests_closest():
    with pytest.raises(verl.ConfigError, match="did you mean 'actor_rollout_ref.rollout.n'"):
        load_config(overrides=["actor_rollout_ref.rollout.nn=5"])


def test_plus_adds_keys_and_refuses_existing():
    cfg = load_config(overrides=["+data.my_key=1"])
    assert cfg.data.my_key == 1
    with pytest.raises(verl.ConfigError, match="already exists"):
        load_config(overrides=["+data.max_prompt_length=1"])


def test_yaml_file_and_malformed_yaml(tmp_path):
    good = tmp_path / "run.yaml"
    good.write_text("algorithm:\n  adv_estimator: grpo\nactor_rollout_ref:\n  rollout:\n    n: 8\n")
    cfg = load_config(good, ["actor_rollout_ref.rollout.n=4"])
    assert cfg.algorithm.adv_estimator == "grpo" and cfg.actor_rollout_ref.rollout.n == 4
    bad = tmp_path / "bad.yaml"
    bad.write_text("algorithm:\n  gamma: 0.9\n  lam: [1, 2\n")
    with pytest.raises(verl.ConfigError, match=r"bad\.yaml:\d+"):
        load_config(bad)


def test_to_yaml_round_trips(tmp_path):
    cfg = load_config(overrides=["algorithm.adv_estimator=rloo", "trainer.experiment_name='0042'"])
    path = tmp_path / "dump.yaml"
    path.write_text(cfg.to_yaml(resolve=False))
    again = load_config(path)
    assert again.to_dict() == cfg.to_dict()
    assert again.trainer.experiment_name == "0042"
