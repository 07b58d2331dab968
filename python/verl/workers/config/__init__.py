"""verl's typed worker configs (``verl.workers.config``): the actor, critic and rollout sections of the config
tree as dataclasses, with their optimizer, engine and checkpoint sub-sections, built with
``verl.utils.omega_conf_to_dataclass`` from verl's YAML (by ``_target_``) or from our ppo_trainer.yaml (by class):

    cfg = verl.load_config(...)   # or OmegaConf
    actor = omega_conf_to_dataclass(cfg.actor_rollout_ref.actor, FSDPActorConfig)

Same fields, defaults and checks as verl 0.9.1 (the FSDP and Megatron-Core variants; verl's VeOmni, TorchTitan
and Automodel ones are not here)."""

from .actor import ActorConfig, FSDPActorConfig, McoreActorConfig, PolicyLossConfig, QATConfig, RouterReplayConfig
from .checkpoint import McoreCheckpointConfig
from .critic import CriticConfig, FSDPCriticConfig, McoreCriticConfig
from .engine import EngineConfig, EngineRouterReplayConfig, FSDPEngineConfig, McoreEngineConfig, QATEngineConfig
from .optimizer import FSDPOptimizerConfig, McoreOptimizerConfig, OptimizerConfig
from .rollout import (
    AgentLoopConfig,
    CheckpointEngineConfig,
    CustomAsyncServerConfig,
    DisaggregationConfig,
    MtpConfig,
    MultiTurnConfig,
    PrometheusConfig,
    RolloutConfig,
    SamplingConfig,
    ServerConfig,
    TraceConfig,
)

__all__ = [
    "ActorConfig", "AgentLoopConfig", "CheckpointEngineConfig", "CriticConfig", "CustomAsyncServerConfig",
    "DisaggregationConfig", "EngineConfig", "EngineRouterReplayConfig", "FSDPActorConfig", "FSDPCriticConfig",
    "FSDPEngineConfig", "FSDPOptimizerConfig", "McoreActorConfig", "McoreCheckpointConfig", "McoreCriticConfig",
    "McoreEngineConfig", "McoreOptimizerConfig", "MtpConfig", "MultiTurnConfig", "OptimizerConfig",
    "PolicyLossConfig", "PrometheusConfig", "QATConfig", "QATEngineConfig", "RolloutConfig", "RouterReplayConfig",
    "SamplingConfig", "ServerConfig", "TraceConfig",
]
