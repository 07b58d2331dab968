"""verl.workers.config: the actor, critic and rollout sections as verl 0.9.1's dataclasses -- built from our
ppo_trainer.yaml by class and from verl-style sections by _target_, with verl's defaults, checks and frozen fields."""

import dataclasses
import os

import pytest
from omegaconf import OmegaConf

from verl.trainer.config import CheckpointConfig, RolloutCorrectionConfig
from verl.utils.config import omega_conf_to_dataclass
from verl.utils.profiler import ProfilerConfig
from verl.workers.config import (
    ActorConfig,
    CriticConfig,
    FSDPActorConfig,
    FSDPCriticConfig,
    FSDPEngineConfig,
    FSDPOptimizerConfig,
    McoreEngineConfig,
    McoreOptimizerConfig,
    OptimizerConfig,
    RolloutConfig,
)

import verl

PPO_YAML = os.path.join(os.path.dirname(verl.__file__), "trainer", "config", "ppo_trainer.yaml")


def _tree():
    cfg = OmegaConf.load(PPO_YAML)
    cfg.actor_rollout_ref.rollout.n = 8
    cfg.actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu = 4
    cfg.actor_rollout_ref.actor.optim.lr_scheduler_type = "cosine"
    cfg.critic.ppo_micro_batch_size_per_gpu = 2
    return cfg


def test_our_ppo_yaml_builds_the_fsdp_actor_with_its_sections_typed():
    actor = omega_conf_to_dataclass(_tree().actor_rollout_ref.actor, FSDPActorConfig)
    assert actor.rollout_n == 8  # ${oc.select:actor_rollout_ref.rollout.n,1}
    assert actor.ppo_mini_batch_size == 256 and actor.ppo_micro_batch_size_per_gpu == 4
    assert isinstance(actor.optim, FSDPOptimizerConfig)
    assert actor.optim.lr == pytest.approx(1e-6) and actor.optim.lr_scheduler_type == "cosine"
    assert actor.optim.betas == [0.9, 0.999] and actor.optim.clip_grad == 1.0
    assert isinstance(actor.fsdp_config, FSDPEngineConfig) and actor.engine is actor.fsdp_config
    assert actor.fsdp_config.strategy == "fsdp"  # the actor's strategy is handed to its engine
    assert isinstance(actor.checkpoint, CheckpointConfig)
    assert actor.checkpoint.load_contents == actor.checkpoint.save_contents == ["model", "optimizer", "extra"]
    assert isinstance(actor.profiler, ProfilerConfig) and actor.profiler.enable is False
    assert actor.policy_loss.loss_mode == "vanilla" and actor.policy_loss.clip_cov_ratio == pytest.approx(2e-4)
    assert actor.old_log_prob_from_update is True  # verl-cpp's key, documented in the YAML


def test_our_ppo_yaml_builds_the_fsdp_critic_and_the_rollout():
    tree = _tree()
    critic = omega_conf_to_dataclass(tree.critic, FSDPCriticConfig)
    assert critic.cliprange_value == 0.5 and critic.ppo_micro_batch_size_per_gpu == 2
    assert isinstance(critic.optim, FSDPOptimizerConfig) and critic.engine is critic.fsdp
    rollout = omega_conf_to_dataclass(tree.actor_rollout_ref.rollout, RolloutConfig)
    assert rollout.name == "native" and rollout.n == 8 and rollout.tensor_model_parallel_size == 1
    assert rollout.val_kwargs.do_sample is False and rollout.val_kwargs.n == 1
    assert rollout.agent.default_agent_loop == "single_turn_agent"


def test_target_picks_the_class_and_nested_targets_follow():
    built = omega_conf_to_dataclass({
        "_target_": "verl.workers.config.FSDPActorConfig", "strategy": "fsdp2", "rollout_n": 4,
        "ppo_micro_batch_size_per_gpu": 1,
        "optim": {"_target_": "verl.workers.config.FSDPOptimizerConfig", "lr": 3e-6, "min_lr_ratio": 0.1},
        "checkpoint": {"_target_": "verl.trainer.config.CheckpointConfig", "save_contents": ["model"]},
    })
    assert type(built) is FSDPActorConfig and built.engine.strategy == "fsdp2"
    assert type(built.optim) is FSDPOptimizerConfig and built.optim.min_lr_ratio == pytest.approx(0.1)
    assert built.checkpoint.save_contents == ["model"]
    assert built.checkpoint.load_contents == ["model", "optimizer", "extra"]


def test_actor_micro_batch_rules():
    with pytest.raises(ValueError, match="You have set both"):
        ActorConfig(strategy="fsdp", rollout_n=1, ppo_micro_batch_size=8, ppo_micro_batch_size_per_gpu=2)
    with pytest.raises(AssertionError, match="Please set at least one"):
        ActorConfig(strategy="fsdp", rollout_n=1)
    assert ActorConfig(strategy="fsdp", rollout_n=1, use_dynamic_bsz=True).ppo_micro_batch_size is None
    with pytest.raises(ValueError, match="Invalid loss_agg_mode: seq-sum"):
        ActorConfig(strategy="fsdp", rollout_n=1, ppo_micro_batch_size_per_gpu=1, loss_agg_mode="seq-sum")
    with pytest.raises(AssertionError):
        ActorConfig(rollout_n=1, ppo_micro_batch_size_per_gpu=1)  # strategy is mandatory (???)


def test_actor_validate_against_devices_and_batch():
    actor = ActorConfig(strategy="fsdp", rollout_n=1, ppo_mini_batch_size=64, ppo_micro_batch_size=6)
    with pytest.raises(ValueError, match=r"train_batch_size \(32\) must be >= actor.ppo_mini_batch_size \(64\)"):
        actor.validate(n_gpus=1, train_batch_size=32)
    with pytest.raises(ValueError, match=r"ppo_mini_batch_size \(64\) must be divisible by ppo_micro_batch_size \(6\)"):
        actor.validate(n_gpus=1, train_batch_size=64)
    ok = ActorConfig(strategy="fsdp", rollout_n=1, ppo_mini_batch_size=64, ppo_micro_batch_size=8)
    ok.validate(n_gpus=8, train_batch_size=128)
    with pytest.raises(ValueError, match=r"must be >= n_gpus \(16\)"):
        ok.validate(n_gpus=16, train_batch_size=128)
    sp = FSDPActorConfig(rollout_n=1, use_dynamic_bsz=True, ulysses_sequence_parallel_size=2)
    assert sp.fsdp_config.ulysses_sequence_parallel_size == 2
    with pytest.raises(ValueError, match="use_remove_padding"):
        sp.validate(n_gpus=2, train_batch_size=8, model_config={"use_remove_padding": False})


def test_frozen_except_the_batch_sizes():
    actor = ActorConfig(strategy="fsdp", rollout_n=1, ppo_micro_batch_size_per_gpu=2)
    actor.ppo_mini_batch_size = 32
    assert actor.ppo_mini_batch_size == 32
    with pytest.raises(dataclasses.FrozenInstanceError):
        actor.clip_ratio = 0.3
    optim = OptimizerConfig(lr=0.5)
    optim.total_training_steps = 100  # set by the trainer once the dataset size is known
    with pytest.raises(dataclasses.FrozenInstanceError):
        optim.lr = 0.1


def test_critic_checks():
    with pytest.raises(ValueError, match=r"ppo_mini_batch_size \(10\) must be divisible by ppo_micro_batch_size \(4\)"):
        CriticConfig(strategy="fsdp", ppo_mini_batch_size=10, ppo_micro_batch_size=4)
    with pytest.raises(ValueError, match="Please set at least one of 'critic.micro_batch_size'"):
        CriticConfig(strategy="fsdp")
    critic = FSDPCriticConfig(ppo_micro_batch_size=2, ppo_mini_batch_size=8)
    with pytest.raises(ValueError, match=r"critic.ppo_micro_batch_size \(2\) \* ulysses_sequence_parallel_size \(1\)"):
        critic.validate(n_gpus=4, train_batch_size=8)
    critic.forward_micro_batch_size_per_gpu = 16
    assert critic.forward_micro_batch_size_per_gpu == 16


def test_optimizer_schedules_and_deprecated_names():
    assert FSDPOptimizerConfig().lr_scheduler_type == "constant" and FSDPOptimizerConfig().min_lr_ratio is None
    with pytest.warns(DeprecationWarning, match="warmup_style"):
        assert FSDPOptimizerConfig(warmup_style="cosine").lr_scheduler_type == "cosine"
    with pytest.warns(DeprecationWarning, match="grad_clip"):
        assert OptimizerConfig(grad_clip=0.5).clip_grad == 0.5
    with pytest.raises(AssertionError):
        FSDPOptimizerConfig(lr_scheduler_type="linear")
    with pytest.raises(AssertionError, match="exp_avg_dtype"):
        McoreOptimizerConfig(exp_avg_dtype="fp16")


def test_engine_configs():
    with pytest.warns(UserWarning, match="TP size is 1"):
        assert McoreEngineConfig().sequence_parallel is False
    assert McoreEngineConfig(tensor_model_parallel_size=4).sequence_parallel is True
    with pytest.raises(AssertionError, match="dtype float32 not supported"):
        McoreEngineConfig(tensor_model_parallel_size=2, dtype="float32")
    with pytest.raises(AssertionError, match="strategy ddp not supported"):
        FSDPEngineConfig(strategy="ddp")
    assert FSDPEngineConfig().fsdp_size == -1 and FSDPEngineConfig().use_no_sync_for_gradient_accumulation is True


def test_rollout_checks():
    with pytest.raises(ValueError, match="'sync' has been removed"):
        RolloutConfig(name="native", mode="sync")
    with pytest.raises(AssertionError, match="expert_parallel_size must be equal"):
        RolloutConfig(name="vllm", tensor_model_parallel_size=2, expert_parallel_size=4)
    trt = RolloutConfig(name="trtllm", tensor_model_parallel_size=4)
    assert trt.expert_parallel_size is None and trt.moe_tensor_parallel_size is None
    with pytest.raises(ValueError, match="requires rollout.name in"):
        RolloutConfig(name="native", disaggregation={"enabled": True})
    assert RolloutConfig(name="vllm", disaggregation={"enabled": True, "decode_replicas": 2}) \
        .disaggregation.effective_decode_tp(4) == 4


def test_profiler_union_and_intersection():
    a = ProfilerConfig(tool="torch", enable=True, ranks=[0, 1], finish_hook_ranks=[3])
    b = ProfilerConfig(tool="torch", all_ranks=True, ranks=[1, 2])
    union, both = a.union(b), a.intersect(b)
    assert (union.enable, union.all_ranks, sorted(union.ranks), union.finish_hook_ranks) == (True, True, [0, 1, 2], [3])
    assert (both.enable, both.all_ranks, both.ranks, both.finish_hook_ranks) == (False, False, [1], [])
    with pytest.raises(AssertionError, match="different tools"):
        a.union(ProfilerConfig(tool="nsys"))


def test_policy_loss_carries_a_rollout_correction_preset():
    built = omega_conf_to_dataclass({"_target_": "verl.workers.config.PolicyLossConfig", "loss_mode": "gspo"})
    assert built.loss_mode == "gspo" and isinstance(built.rollout_correction, RolloutCorrectionConfig)
    assert built.rollout_correction.rollout_is == "sequence"
