"""``actor_rollout_ref.rollout``: the generation config (verl's ``verl.workers.config.rollout``): sampling,
lengths, the inference engine's parallelism and memory, validation sampling, log-prob recomputation batching,
the agent loop, multi-turn tool use, tracing, weight sync. verl-cpp generates with its own engine
(``name: native``); the vLLM / SGLang knobs are kept so a verl config builds, as in verl."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import ClassVar, Optional

from omegaconf import MISSING

from ...base_config import BaseConfig
from ...utils.profiler.config import ProfilerConfig

__all__ = ["AgentLoopConfig", "CheckpointEngineConfig", "CustomAsyncServerConfig", "DisaggregationConfig",
           "MtpConfig", "MultiTurnConfig", "PrometheusConfig", "RolloutConfig", "SamplingConfig", "ServerConfig",
           "TraceConfig"]

_DISAGGREGATION_BACKENDS = ("nixl", "mooncake", "ascend", "mori", "fake")
_MOONCAKE_PROTOCOLS = ("nvlink", "local", "rdma", "tcp")


@dataclass
class SamplingConfig(BaseConfig):
    """``rollout.val_kwargs``: sampling for validation."""

    temperature: float = 1.0
    top_k: int = -1
    top_p: float = 1.0
    do_sample: bool = True
    n: int = 1


@dataclass
class MultiTurnConfig(BaseConfig):
    """``rollout.multi_turn``: tool-calling conversations: turn limits, the tool config files, parallel calls,
    tool-response truncation, the chat template used at inference, the tool-call format."""

    _mutable_fields: ClassVar[set[str]] = {"max_assistant_turns", "max_user_turns"}

    enable: bool = False
    max_assistant_turns: Optional[int] = None
    tool_config_path: Optional[str] = None
    function_tool_path: Optional[str] = None
    max_user_turns: Optional[int] = None
    max_parallel_calls: int = 1
    max_tool_response_length: int = 256
    tool_response_truncate_side: str = "middle"
    use_inference_chat_template: bool = False
    tokenization_sanity_check_mode: str = "strict"
    format: str = "hermes"
    num_repeat_rollouts: Optional[int] = None


@dataclass
class CustomAsyncServerConfig(BaseConfig):
    """A user's async server class: the file and the class name."""

    path: Optional[str] = None
    name: Optional[str] = None


@dataclass
class AgentLoopConfig(BaseConfig):
    """``rollout.agent``: agent-loop workers, the default loop, a file of loop configs, a custom server / manager."""

    num_workers: int = 8
    default_agent_loop: str = "single_turn_agent"
    agent_loop_config_path: Optional[str] = None
    custom_async_server: CustomAsyncServerConfig = field(default_factory=CustomAsyncServerConfig)
    agent_loop_manager_class: Optional[str] = None


@dataclass
class TraceConfig(BaseConfig):
    """``rollout.trace``: rollout tracing (weave, mlflow): project, experiment, token-to-text, a per-step cap."""

    project_name: Optional[str] = None
    experiment_name: Optional[str] = None
    backend: Optional[str] = None
    token2text: bool = False
    max_samples_per_step_per_worker: Optional[int] = None

    def __post_init__(self) -> None:
        if self.max_samples_per_step_per_worker is not None and self.max_samples_per_step_per_worker < 0:
            raise ValueError("`max_samples_per_step_per_worker` must be a non-negative integer or null.")


@dataclass
class ServerConfig(BaseConfig):
    """``rollout.server``: requests to a rollout server: timeout, attempts, retry delay, connections, start wait."""

    timeout: float = 60.0
    max_attempts: int = 3
    retry_delay: float = 2.0
    max_connections: int = 1000
    max_start_wait_time: float = 300.0


@dataclass
class PrometheusConfig(BaseConfig):
    """``rollout.prometheus``: metrics of a server-mode rollout."""

    enable: bool = False
    port: int = 9090
    file: str = "/tmp/ray/session_latest/metrics/prometheus/prometheus.yml"
    served_model_name: Optional[str] = None


@dataclass
class CheckpointEngineConfig(BaseConfig):
    """``rollout.checkpoint_engine``: how trained weights reach the rollout (backend, bucket size, options)."""

    _mutable_fields: ClassVar[set[str]] = {"backend"}

    backend: Optional[str] = "naive"
    update_weights_bucket_megabytes: int = 2048
    engine_kwargs: dict = field(default_factory=dict)
    custom_backend_module: Optional[str] = None


@dataclass
class MtpConfig(BaseConfig):
    """``*.mtp``: multi-token prediction layers, in training (with a loss scale) and as speculative decoding in
    the rollout."""

    enable: bool = False
    enable_train: bool = False
    enable_rollout: bool = False
    detach_encoder: bool = False
    mtp_loss_scaling_factor: float = 0.1
    speculative_algorithm: str = "EAGLE"
    speculative_num_steps: int = 3
    speculative_eagle_topk: int = 1
    speculative_num_draft_tokens: int = 4
    method: str = "mtp"
    num_speculative_tokens: int = 1


@dataclass
class DisaggregationConfig(BaseConfig):
    """``rollout.disaggregation``: prefill-decode disaggregation (replica counts, decode TP, KV transfer)."""

    enabled: bool = False
    prefill_replicas: int = 1
    decode_replicas: int = 1
    decode_tensor_model_parallel_size: Optional[int] = None
    transfer_backend: str = "nixl"
    bootstrap_port: Optional[int] = None
    ib_device: Optional[str] = None
    mooncake_protocol: str = "nvlink"

    def __post_init__(self) -> None:
        if not self.enabled:
            return
        if self.transfer_backend not in _DISAGGREGATION_BACKENDS:
            raise ValueError(f"disaggregation.transfer_backend={self.transfer_backend!r} not in "
                             f"{_DISAGGREGATION_BACKENDS}")
        if self.prefill_replicas < 1 or self.decode_replicas < 1:
            raise ValueError(f"disaggregation requires >=1 prefill and >=1 decode replica (got prefill_replicas="
                             f"{self.prefill_replicas}, decode_replicas={self.decode_replicas})")
        if self.bootstrap_port is not None and not 0 < self.bootstrap_port < 65536:
            raise ValueError(f"bootstrap_port out of range: {self.bootstrap_port}")
        if self.transfer_backend == "mooncake" and self.mooncake_protocol not in _MOONCAKE_PROTOCOLS:
            raise ValueError(f"disaggregation.mooncake_protocol={self.mooncake_protocol!r} not in "
                             f"{_MOONCAKE_PROTOCOLS}")

    def effective_decode_tp(self, prefill_tp: int) -> int:
        """The decode replicas' tensor-parallel size (the prefill one unless set)."""
        if self.decode_tensor_model_parallel_size is not None:
            return self.decode_tensor_model_parallel_size
        return prefill_tp


@dataclass
class RolloutConfig(BaseConfig):
    """The rollout: the engine ``name`` (verl-cpp: native), sampling (``temperature``, ``top_k``, ``top_p``,
    ``do_sample``, ``n`` samples per prompt, ``repetition_penalty``), ``prompt_length`` / ``response_length``,
    the engine's parallel sizes, memory share and batching, validation sampling (``val_kwargs``), the micro-batching
    of log-prob recomputation, and the agent-loop, multi-turn, tracing, server and weight-sync sections.

    Checked as verl checks it: ``mode`` ``sync`` is refused (ValueError) and other modes but ``async`` warn;
    an expert-parallel size above 1 must equal TP x DP (except trtllm); pipeline parallelism is refused for vllm,
    sglang and trtllm; disaggregation needs sglang or vllm."""

    _mutable_fields: ClassVar[set[str]] = {
        "max_model_len", "load_format", "engine_kwargs", "prompt_length", "response_length", "expert_parallel_size",
        "moe_tensor_parallel_size", "full_determinism", "max_num_seqs"}

    name: Optional[str] = MISSING
    mode: str = "async"
    nnodes: int = 0
    n_gpus_per_node: int = 8
    temperature: float = 1.0
    top_k: int = -1
    top_p: float = 1.0
    do_sample: bool = True
    n: int = 1
    repetition_penalty: float = 1.0
    full_determinism: bool = False
    seed: int = 42
    over_sample_rate: float = 0.0
    prompt_length: int = 512
    response_length: int = 512
    dtype: str = "bfloat16"
    gpu_memory_utilization: float = 0.5
    standalone_gpu_memory_utilization: Optional[float] = None
    ignore_eos: bool = False
    enforce_eager: bool = False
    cudagraph_capture_sizes: Optional[list] = None
    free_cache_engine: bool = True
    data_parallel_size: int = 1
    expert_parallel_size: Optional[int] = 1
    tensor_model_parallel_size: int = 2
    pipeline_model_parallel_size: int = 1
    moe_tensor_parallel_size: Optional[int] = 1
    max_num_batched_tokens: int = 8192
    logprobs_mode: Optional[str] = "processed_logprobs"
    scheduling_policy: Optional[str] = "fcfs"
    val_kwargs: SamplingConfig = field(default_factory=SamplingConfig)
    max_model_len: Optional[int] = None
    max_num_seqs: int = 1024
    log_prob_micro_batch_size: Optional[int] = None
    log_prob_micro_batch_size_per_gpu: Optional[int] = None
    log_prob_use_dynamic_bsz: bool = False
    log_prob_max_token_len_per_gpu: int = 16384
    disable_log_stats: bool = True
    multi_stage_wake_up: bool = False
    engine_kwargs: dict = field(default_factory=dict)
    calculate_log_probs: bool = False
    agent: AgentLoopConfig = field(default_factory=AgentLoopConfig)
    trace: TraceConfig = field(default_factory=TraceConfig)
    multi_turn: MultiTurnConfig = field(default_factory=MultiTurnConfig)
    server: ServerConfig = field(default_factory=ServerConfig)
    prometheus: PrometheusConfig = field(default_factory=PrometheusConfig)
    custom: Optional[dict] = None
    checkpoint_manager_class: Optional[str] = None
    checkpoint_engine: CheckpointEngineConfig = field(default_factory=CheckpointEngineConfig)
    profiler: Optional[ProfilerConfig] = None
    enable_chunked_prefill: bool = True
    enable_prefix_caching: bool = True
    load_format: str = "dummy"
    layered_summon: bool = False
    layer_name_map: dict = field(default_factory=dict)
    sglang_engine_mode: str = "local"
    limit_images: Optional[int] = None
    skip_tokenizer_init: bool = True
    quantization: Optional[str] = None
    quantization_config_file: Optional[str] = None
    enable_rollout_routing_replay: bool = False
    moe_load_balance_metrics_interval: int = 0
    enable_sleep_mode: bool = True
    mtp: MtpConfig = field(default_factory=MtpConfig)
    qat: Optional[dict] = None
    disaggregation: DisaggregationConfig = field(default_factory=DisaggregationConfig)
    router_config_path: Optional[str] = None

    def __post_init__(self) -> None:
        if self.mode == "sync":
            raise ValueError("Rollout mode 'sync' has been removed. Please set `actor_rollout_ref.rollout.mode=async` "
                             "or remove the mode setting entirely.")
        if self.mode != "async":
            warnings.warn(f"Unknown rollout mode '{self.mode}'. Only 'async' mode is supported. The 'mode' field is "
                          "deprecated and will be removed in a future version.", DeprecationWarning, stacklevel=2)
        if self.name != "trtllm" and self.expert_parallel_size is not None and self.expert_parallel_size > 1:
            assert self.expert_parallel_size == self.tensor_model_parallel_size * self.data_parallel_size, (
                "expert_parallel_size must be equal to tensor_model_parallel_size * data_parallel_size")
        if self.moe_tensor_parallel_size is not None and self.moe_tensor_parallel_size > 1:
            assert self.name == "trtllm", "moe_tensor_parallel_size is only supported for trtllm"
        if self.name == "trtllm":
            # TensorRT-LLM reads a size of 1 as "unspecified" and derives it from the tensor-parallel size.
            if self.expert_parallel_size == 1:
                self.expert_parallel_size = None
            if self.moe_tensor_parallel_size == 1:
                self.moe_tensor_parallel_size = None
            if self.expert_parallel_size is not None and self.moe_tensor_parallel_size is not None:
                assert self.moe_tensor_parallel_size * self.expert_parallel_size == self.tensor_model_parallel_size, (
                    "moe_tensor_parallel_size * expert_parallel_size must equal tensor_model_parallel_size "
                    f"(got {self.moe_tensor_parallel_size} * {self.expert_parallel_size}, "
                    f"tensor_model_parallel_size={self.tensor_model_parallel_size})")
        if self.pipeline_model_parallel_size > 1 and self.name in ("vllm", "sglang", "trtllm"):
            raise NotImplementedError(
                f"Current rollout {self.name=} not implemented pipeline_model_parallel_size > 1 yet.")
        if isinstance(self.disaggregation, dict):
            object.__setattr__(self, "disaggregation", DisaggregationConfig(**self.disaggregation))
        elif not isinstance(self.disaggregation, DisaggregationConfig):
            raise TypeError("rollout.disaggregation must be a dict or DisaggregationConfig; got "
                            f"{type(self.disaggregation).__name__}.")
        if self.disaggregation.enabled and self.name not in ("sglang", "vllm"):
            raise ValueError("rollout.disaggregation.enabled=True requires rollout.name in ('sglang', 'vllm'); got "
                             f"{self.name!r}.")
