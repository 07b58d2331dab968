"""verl's agent loop framework (``verl.experimental.agent_loop``) over one in-process ``verl.rollout.LLM``.

An agent loop turns one sample (its chat messages, ``raw_prompt``) into one trajectory: prompt ids, response ids
(the model's tokens and, between its turns, tool / environment tokens), ``response_mask`` (1 on the model's tokens,
0 on the rest) and the model's log-probs. Loops are registered by name (``@register("tool_agent")``) and chosen per
sample by its ``agent_name`` (``rollout.agent.default_agent_loop`` otherwise). ``AgentLoopWorker`` runs a batch's
loops concurrently as asyncio tasks: each awaits ``LLM.generate_async`` for its turns, the C++ engine thread batches
all turns in flight together, and one sample's tool calls run while the others decode.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import time
from abc import ABC, abstractmethod
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import torch

from .config import AgentLoopConfig

__all__ = ["AgentLoopBase", "AgentLoopMetrics", "AgentLoopOutput", "AgentLoopWorker", "LLMServerClient",
           "TokenOutput", "register", "get_agent_loop_class", "turn_seed"]


@dataclass
class AgentLoopMetrics:
    """verl's per-sample timings (seconds) and preemptions (-1: not reported by the engine)."""

    generate_sequences: float = 0.0
    tool_calls: float = 0.0
    compute_score: float = 0.0
    num_preempted: int = -1


@dataclass
class AgentLoopOutput:
    prompt_ids: list[int]
    response_ids: list[int]
    """The model's tokens and the tool tokens between its turns."""
    response_mask: list[int]
    """1 on the model's tokens, 0 on tool tokens."""
    response_logprobs: Optional[list[float]] = None
    """The model's log-probs of its tokens (0.0 on tool tokens)."""
    multi_modal_data: Optional[dict[str, Any]] = None
    reward_score: Optional[float] = None
    num_turns: int = 0
    """Chat turns: the user's prompt, each assistant turn and each tool turn."""
    metrics: AgentLoopMetrics = field(default_factory=AgentLoopMetrics)
    extra_fields: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.response_mask) != len(self.response_ids):
            raise ValueError(f"AgentLoopOutput: response_mask has {len(self.response_mask)} entries for "
                             f"{len(self.response_ids)} response ids")
        if self.response_logprobs is not None and len(self.response_logprobs) != len(self.response_ids):
            raise ValueError(f"AgentLoopOutput: response_logprobs has {len(self.response_logprobs)} entries for "
                             f"{len(self.response_ids)} response ids")


@dataclass
class TokenOutput:
    """One generation (verl's ``verl.workers.rollout.replica.TokenOutput``)."""

    token_ids: list[int]
    log_probs: Optional[list[float]] = None
    finish_reason: Optional[str] = None
    num_preempted: Optional[int] = None
    extra_fields: dict[str, Any] = field(default_factory=dict)


class LLMServerClient:
    """verl's ``server_manager.generate(request_id=, prompt_ids=, sampling_params=)`` over ``LLM.generate_async``,
    so agent loops written against verl's server manager run unchanged. ``sampling_params`` is verl's dict
    (``temperature``, ``top_p``, ``top_k``, ``max_tokens``, ``stop_token_ids``, ``seed``, ...)."""

    _KEYS = ("temperature", "top_p", "top_k", "min_p", "max_tokens", "stop_token_ids", "ignore_eos", "seed", "logprobs")

    def __init__(self, llm: Any) -> None:
        self.llm = llm

    async def generate(self, request_id: Any = None, *, prompt_ids: Sequence[int], sampling_params: dict[str, Any],
                       **_multimodal: Any) -> TokenOutput:
        from verl.rollout import SamplingParams

        for key, value in _multimodal.items():
            if value is not None and key in ("image_data", "video_data", "audio_data", "mm_processor_output"):
                raise ValueError(f"agent loop: {key} given, but verl-cpp's rollout is text-only")
        unknown = sorted(set(sampling_params) - set(self._KEYS) - {"repetition_penalty", "logprobs"})
        if unknown:
            raise ValueError(f"sampling_params: unsupported key(s) {unknown} (supported: {list(self._KEYS)})")
        if sampling_params.get("repetition_penalty", 1.0) != 1.0:
            raise ValueError("sampling_params.repetition_penalty is not supported by verl-cpp's rollout")
        chosen = {k: v for k, v in sampling_params.items() if k in self._KEYS and k != "logprobs"}
        params = SamplingParams(n=1, **chosen)
        out = await self.llm.generate_async(list(prompt_ids), params)
        completion = out.outputs[0]
        return TokenOutput(token_ids=list(completion.token_ids), log_probs=list(completion.logprobs),
                           finish_reason=completion.finish_reason, num_preempted=-1)


class AgentLoopBase(ABC):
    """One sample's interaction: ``await self.run(sampling_params, **sample_fields)``. ``self.server_manager``
    generates (``LLMServerClient``), ``self.tokenizer`` renders and decodes, ``self.rollout_config`` holds
    ``prompt_length`` / ``response_length`` / ``multi_turn`` / ``agent``."""

    def __init__(self, config: AgentLoopConfig, server_manager: LLMServerClient, tokenizer: Any,
                 apply_chat_template_kwargs: Optional[dict[str, Any]] = None, **kwargs: Any) -> None:
        self.config = config
        self.rollout_config = config
        self.server_manager = server_manager
        self.tokenizer = tokenizer
        self.apply_chat_template_kwargs = dict(apply_chat_template_kwargs or {})

    @abstractmethod
    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        """``kwargs``: the sample's fields (``raw_prompt``: its messages; ``tools_kwargs``, ``extra_info``...)."""


_agent_loop_registry: dict[str, dict[str, Any]] = {}


def register(agent_name: str):
    """Registers an ``AgentLoopBase`` subclass under ``agent_name`` (a sample selects it by ``agent_name``)."""

    def decorator(subclass: type[AgentLoopBase]) -> type[AgentLoopBase]:
        if not (isinstance(subclass, type) and issubclass(subclass, AgentLoopBase)):
            raise TypeError(f"@register({agent_name!r}): {subclass!r} is not an AgentLoopBase subclass")
        _agent_loop_registry[agent_name] = {"_target_": f"{subclass.__module__}.{subclass.__qualname__}",
                                            "cls": subclass, "kwargs": {}}
        return subclass

    return decorator


def get_agent_loop_class(agent_name: str) -> tuple[type[AgentLoopBase], dict[str, Any]]:
    entry = _agent_loop_registry.get(agent_name)
    if entry is None:
        raise ValueError(f"unknown agent loop {agent_name!r} (registered: {sorted(_agent_loop_registry)}); "
                         "register it with @register(name) or rollout.agent.agent_loop_config_path")
    return entry["cls"], entry["kwargs"]


def register_from_config_file(path: str | os.PathLike) -> list[str]:
    """``rollout.agent.agent_loop_config_path``: a YAML list of ``{name, _target_, **kwargs}``; each ``_target_``
    class (an ``AgentLoopBase`` subclass) is registered under ``name`` with ``kwargs`` for its constructor."""
    from omegaconf import OmegaConf

    if not os.path.isfile(os.fspath(path)):
        raise FileNotFoundError(f"rollout.agent.agent_loop_config_path does not exist: {path}")
    entries = OmegaConf.to_container(OmegaConf.load(os.fspath(path)), resolve=True)
    if not isinstance(entries, list):
        raise ValueError(f"{path}: an agent loop config is a list of {{name, _target_, ...}}")
    names = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict) or "name" not in entry or "_target_" not in entry:
            raise ValueError(f"{path}[{index}]: each agent loop needs 'name' and '_target_'")
        module_name, _, class_name = str(entry["_target_"]).rpartition(".")
        cls = getattr(importlib.import_module(module_name), class_name, None)
        if not (isinstance(cls, type) and issubclass(cls, AgentLoopBase)):
            raise TypeError(f"{path}[{index}]: {entry['_target_']} is not an AgentLoopBase subclass")
        kwargs = {k: v for k, v in entry.items() if k not in ("name", "_target_")}
        _agent_loop_registry[entry["name"]] = {"_target_": entry["_target_"], "cls": cls, "kwargs": kwargs}
        names.append(entry["name"])
    return names


_MASK64 = (1 << 64) - 1


def turn_seed(seed: int, turn: int) -> int:
    """The sampling seed of a conversation's ``turn``-th generation (0-based) when its first uses ``seed``: turn 0
    keeps ``seed`` (a one-turn rollout samples what the engine's one-shot generation samples for that seed), later
    turns a SplitMix64 mix of (seed, turn) -- a fresh stream per turn, the same whatever order tools finish in."""
    if turn == 0:
        return seed
    z = (seed + turn * 0x9E3779B97F4A7C15) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return (z ^ (z >> 31)) >> 2  # 62 bits: a non-negative int64


@contextmanager
def simple_timer(name: str, metrics: AgentLoopMetrics):
    """Adds the block's wall time (seconds) to ``metrics.<name>``."""
    start = time.perf_counter()
    try:
        yield
    finally:
        setattr(metrics, name, getattr(metrics, name) + time.perf_counter() - start)


class AgentLoopWorker:
    """Runs a batch of samples, each in the agent loop its ``agent_name`` names, concurrently over one ``LLM``.

    ``tools``: the tool objects ``tool_agent`` may call (``BaseTool`` / ``FunctionTool``); by default those of
    ``multi_turn.tool_config_path`` and ``multi_turn.function_tool_path``.
    """

    def __init__(self, llm: Any, tokenizer: Any = None, config: AgentLoopConfig | Any = None,
                 tools: Optional[list[Any]] = None,
                 apply_chat_template_kwargs: Optional[dict[str, Any]] = None) -> None:
        self.llm = llm
        self.tokenizer = tokenizer if tokenizer is not None else getattr(llm, "tokenizer", None)
        if self.tokenizer is None:
            raise ValueError("AgentLoopWorker: a tokenizer is needed (pass one, or build the LLM with one)")
        if config is None:
            config = AgentLoopConfig()
        elif not isinstance(config, AgentLoopConfig):
            config = AgentLoopConfig.from_rollout_config(config)
        self.config = config
        if tools is None:
            from verl.tools.tool_registry import load_all_tools

            tools = load_all_tools(config.multi_turn.tool_config_path, config.multi_turn.function_tool_path)
        self.tools = list(tools)
        if config.agent.agent_loop_config_path:
            register_from_config_file(config.agent.agent_loop_config_path)
        self.server_manager = LLMServerClient(llm)
        self.apply_chat_template_kwargs = dict(apply_chat_template_kwargs or {})
        self._loops: dict[str, AgentLoopBase] = {}

    def agent_loop(self, agent_name: str) -> AgentLoopBase:
        if agent_name not in self._loops:
            cls, kwargs = get_agent_loop_class(agent_name)
            self._loops[agent_name] = cls(self.config, self.server_manager, self.tokenizer,
                                          apply_chat_template_kwargs=self.apply_chat_template_kwargs,
                                          tools=self.tools, **kwargs)
        return self._loops[agent_name]

    async def run_async(self, samples: Sequence[dict[str, Any]], sampling_params: dict[str, Any],
                        seeds: Optional[Sequence[int]] = None) -> list[AgentLoopOutput]:
        """One task per sample (its fields as keyword arguments of ``run``); outputs in sample order. ``seeds``:
        sample i's sampling seed (its first turn's; ``turn_seed`` derives the later turns')."""
        if seeds is not None and len(seeds) != len(samples):
            raise ValueError(f"run_async: {len(seeds)} seeds for {len(samples)} samples")
        tasks = []
        for i, sample in enumerate(samples):
            sample = dict(sample)
            name = sample.pop("agent_name", None) or self.config.agent.default_agent_loop
            params = dict(sampling_params) if seeds is None else {**sampling_params, "seed": int(seeds[i])}
            tasks.append(self.agent_loop(str(name)).run(params, **sample))
        return list(await asyncio.gather(*tasks))

    def run(self, samples: Sequence[dict[str, Any]], sampling_params: dict[str, Any],
            seeds: Optional[Sequence[int]] = None) -> list[AgentLoopOutput]:
        """``run_async`` to completion. Called from inside a running event loop (a notebook, an async caller), the
        loops run on a fresh event loop in a helper thread: ``asyncio.run`` cannot nest."""
        coroutine = self.run_async(samples, sampling_params, seeds)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(coroutine)
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(asyncio.run, coroutine).result()

    def generate_sequences(self, prompts: Any, sampling_params: Optional[dict[str, Any]] = None, *,
                           seeds: Optional[Sequence[int]] = None, prompt_length: Optional[int] = None,
                           pad_token_id: Optional[int] = None) -> Any:
        """verl's ``generate_sequences`` for agent rollouts: a ``DataProto`` whose ``non_tensor_batch`` holds
        ``raw_prompt`` (each row's messages) and optionally ``agent_name`` / ``tools_kwargs`` / ``extra_info``;
        returns left-padded ``prompts`` (``prompt_length``, default rollout.prompt_length), right-padded
        ``responses`` / ``response_mask`` / ``rollout_log_probs`` (response_length), ``input_ids`` /
        ``attention_mask`` / ``position_ids``, ``rm_scores`` when every loop reported a ``reward_score``, and in
        ``non_tensor_batch`` -- as verl's agent loop manager -- the input columns, ``__num_turns__`` and each
        loop's extra fields (``turn_scores``, ``tool_rewards``, ``tool_call_counts``, ...), one column per key."""
        import numpy as np

        from verl.protocol import DataProto

        non_tensor = prompts.non_tensor_batch
        if "raw_prompt" not in non_tensor:
            raise ValueError("generate_sequences: non_tensor_batch['raw_prompt'] (each row's messages) is missing "
                             "(data.return_raw_chat=true keeps it)")
        count = len(non_tensor["raw_prompt"])
        samples = []
        for i in range(count):
            sample = {"raw_prompt": list(non_tensor["raw_prompt"][i])}
            for key in ("agent_name", "tools_kwargs", "extra_info", "index"):
                if key in non_tensor and non_tensor[key][i] is not None:
                    sample[key] = non_tensor[key][i]
            samples.append(sample)
        outputs = self.run(samples, dict(sampling_params or {}), seeds)
        if pad_token_id is None:
            pad_token_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        batch = pad_agent_outputs(outputs, prompt_length or self.config.prompt_length, self.config.response_length,
                                  pad_token_id)
        scores = [o.reward_score for o in outputs]
        if outputs and all(score is not None for score in scores):
            # verl: a loop's own score on the response's last token, which the reward managers then return
            lengths = batch["attention_mask"][:, batch["prompts"].shape[1]:].sum(-1)
            rm_scores = torch.zeros(batch["responses"].shape, dtype=torch.float32)
            rm_scores[torch.arange(count), (lengths - 1).clamp_min(0)] = torch.tensor(scores, dtype=torch.float32)
            batch["rm_scores"] = rm_scores
        extra: dict[str, Any] = {"__num_turns__": np.array([o.num_turns for o in outputs], dtype=np.int32)}
        for key in sorted({k for o in outputs for k in o.extra_fields} | {"turn_scores", "tool_rewards"}):
            column = np.empty(count, dtype=object)
            column[:] = [o.extra_fields.get(key) for o in outputs]
            extra[key] = column
        return DataProto.from_dict(tensors=batch, non_tensors={**dict(non_tensor), **extra},
                                   meta_info=dict(prompts.meta_info))


def pad_agent_outputs(outputs: Sequence[AgentLoopOutput], prompt_length: int, response_length: int,
                      pad_token_id: int) -> dict[str, torch.Tensor]:
    """verl's layout: prompts left-padded to ``prompt_length``, responses right-padded to ``response_length``
    (longer responses cut there); ``attention_mask`` 1 on every real token, ``response_mask`` the loops' (0 on tool
    tokens), ``position_ids`` counting real tokens from 0. Built by C++'s generation layout (verl/trainer/generation.h),
    the trainer's own."""
    from verl import _C

    return _C.trainer.generation_layout(
        [list(o.prompt_ids) for o in outputs], [list(o.response_ids) for o in outputs],
        [list(o.response_mask) for o in outputs],
        [list(o.response_logprobs) if o.response_logprobs is not None else [] for o in outputs],
        prompt_length, response_length, pad_token_id)
