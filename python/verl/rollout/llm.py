"""``verl.rollout.LLM``: vLLM's offline ``LLM`` API over ``verl._C.rollout.Engine``.

Log-probs are of the temperature-scaled, untruncated distribution ``log_softmax(logits / T)``
(``T = 0``: the unscaled one), which is what verl's actor recomputes. Sample ``i`` of a request
with ``seed = s`` is drawn exactly as a request with ``n = 1, seed = s + i``; seeded outputs do not
depend on what else is batched.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Sequence

import torch

from verl import _C
from verl.protocol import DataProto

from .async_front import TokenDelta

__all__ = ["LLM", "SamplingParams", "RequestOutput", "CompletionOutput", "RolloutReplicas", "TokenDelta"]

SamplingParams = _C.rollout.SamplingParams


@dataclass
class CompletionOutput:
    index: int
    token_ids: list[int]
    logprobs: list[float]
    finish_reason: str  # "stop", "length" or "abort"
    text: str | None = None


@dataclass
class RequestOutput:
    request_id: int
    prompt_token_ids: list[int]
    outputs: list[CompletionOutput] = field(default_factory=list)
    prompt: str | None = None


def _cpp_model(model: Any) -> Any:
    """The ``verl._C.model.CausalLM`` behind a ``verl.models`` wrapper (or the C++ object itself)."""
    inner = getattr(model, "_module", model)
    if not isinstance(inner, _C.model.CausalLM):
        raise TypeError(f"model must be a verl.models CausalLM, a verl._C.model.CausalLM or a path, got {type(model).__name__}")
    if inner.value_head:
        raise ValueError("model: a value model (critic) cannot generate")
    return inner


def _load_from_path(path: str | os.PathLike, dtype: torch.dtype | None, device: str | None) -> Any:
    """A Hugging Face checkpoint directory (config.json + model.safetensors[.index.json])."""
    from verl.models import load_model

    return load_model(path, dtype=dtype if dtype is not None else "float32", device=device or "cpu")


def _to_request_output(out: Any, tokenizer: Any, prompt: str | None) -> RequestOutput:
    outputs = []
    for c in out.outputs:
        text = tokenizer.decode(c.token_ids, skip_special_tokens=True) if tokenizer is not None else None
        outputs.append(CompletionOutput(c.index, list(c.token_ids), list(c.logprobs), c.finish_reason, text))
    return RequestOutput(out.request_id, list(out.prompt_token_ids), outputs, prompt)


class LLM:
    """Offline generation. ``model``: a ``verl.models.transformer.CausalLM`` (bound, not copied: the
    trainer's weight updates are seen at once) or a checkpoint directory.

    ``kv_cache_memory_bytes`` sets the KV cache budget; on CUDA, when it is unset,
    ``gpu_memory_utilization`` of the device's free memory is used. ``enable_prefix_caching`` (vLLM's name) lets a
    request reuse the KV blocks of an earlier request's identical prefix -- a multi-turn conversation's next turn
    prefills only its new tokens; ``stats()["num_cached_tokens"]`` counts the reused tokens.
    ``paged_attention_kernel``: attention reads the KV blocks in place through verl's paged-attention kernel where
    the device has one (CPU; CUDA builds); ``False`` gathers each row's blocks for SDPA instead (for comparisons).
    ``enforce_eager`` / ``cudagraph_capture_sizes`` (vLLM's): on CUDA, decode steps replay a CUDA graph per
    batch-size bucket unless ``enforce_eager``; the buckets default to 1, 2, 4, 8, multiples of 16 and max_num_seqs.
    ``async_scheduling`` (vLLM's): a decode step is launched before the previous step's tokens are read back, so the
    host's work between steps overlaps the device's; the outputs are the synchronous loop's. ``None``: on for devices
    other than the CPU.
    """

    def __init__(self, model: Any, tokenizer: Any = None, *, dtype: torch.dtype | None = None,
                 device: str | None = None, block_size: int = 16, max_num_seqs: int = 256,
                 max_num_batched_tokens: int = 2048, max_model_len: int | None = None,
                 kv_cache_memory_bytes: int | None = None, gpu_memory_utilization: float = 0.5,
                 eos_token_id: int | Sequence[int] | None = None, seed: int = 0,
                 enable_prefix_caching: bool = False, paged_attention_kernel: bool = True,
                 enforce_eager: bool = False, cudagraph_capture_sizes: Sequence[int] | None = None,
                 async_scheduling: bool | None = None) -> None:
        if isinstance(model, (str, os.PathLike)):
            path = os.fspath(model)
            model = _load_from_path(path, dtype, device)
            if tokenizer is None and os.path.exists(os.path.join(path, "tokenizer.json")):
                from verl.tokenizer import load_tokenizer

                tokenizer = load_tokenizer(path)
        self.model = model
        self.tokenizer = tokenizer
        cpp = _cpp_model(model)
        if kv_cache_memory_bytes is None and cpp.device.startswith("cuda"):
            if not 0.0 < gpu_memory_utilization <= 1.0:
                raise ValueError(f"gpu_memory_utilization must be in (0, 1], got {gpu_memory_utilization}")
            free, _ = torch.cuda.mem_get_info(torch.device(cpp.device))
            kv_cache_memory_bytes = int(free * gpu_memory_utilization)
        if eos_token_id is None:
            eos = []
        elif isinstance(eos_token_id, int):
            eos = [eos_token_id]
        else:
            eos = list(eos_token_id)
        self._front = None  # the asyncio front (generate_async / generate_stream), made on first use
        self.engine = _C.rollout.Engine(
            cpp, block_size=block_size, max_num_seqs=max_num_seqs, max_num_batched_tokens=max_num_batched_tokens,
            max_model_len=max_model_len or 0, kv_cache_bytes=kv_cache_memory_bytes or 0, eos_token_ids=eos, seed=seed,
            enable_prefix_caching=enable_prefix_caching, paged_attention_kernel=paged_attention_kernel,
            enforce_eager=enforce_eager, cudagraph_capture_sizes=list(cudagraph_capture_sizes or []),
            async_scheduling=async_scheduling)

    @classmethod
    def from_engine(cls, engine: Any, tokenizer: Any = None) -> LLM:
        """An ``LLM`` over an existing ``verl._C.rollout.Engine`` -- e.g. a PPO trainer's (``trainer.engine``):
        its weights, KV cache and stop ids, no second copy."""
        if not isinstance(engine, _C.rollout.Engine):
            raise TypeError(f"engine must be a verl._C.rollout.Engine, got {type(engine).__name__}")
        llm = cls.__new__(cls)
        llm.model = None
        llm.tokenizer = tokenizer
        llm._front = None
        llm.engine = engine
        return llm

    # -- vLLM API -------------------------------------------------------------------------------
    def generate(self, prompts: str | Sequence[str] | None = None,
                 sampling_params: SamplingParams | Sequence[SamplingParams] | None = None,
                 prompt_token_ids: Sequence[Sequence[int]] | None = None, use_tqdm: bool = False) -> list[RequestOutput]:
        """Generates for text prompts (needs a tokenizer) or token-id prompts; outputs in input order."""
        texts: list[str | None]
        if prompt_token_ids is None:
            if prompts is None:
                raise ValueError("generate: give prompts or prompt_token_ids")
            if isinstance(prompts, str):
                prompts = [prompts]
            if self.tokenizer is None:
                raise ValueError("prompts: text prompts need a tokenizer; pass prompt_token_ids instead")
            texts = list(prompts)
            ids = [self.tokenizer.encode(p, add_special_tokens=False) for p in texts]
        else:
            if prompts is not None:
                raise ValueError("generate: give prompts or prompt_token_ids, not both")
            ids = [[int(t) for t in p] for p in prompt_token_ids]
            texts = [None] * len(ids)
        if sampling_params is None:
            params = [SamplingParams()]
        elif isinstance(sampling_params, SamplingParams):
            params = [sampling_params]
        else:
            params = list(sampling_params)
        self._check_no_async_in_flight("generate")
        outs = self.engine.generate(ids, params)
        return [_to_request_output(o, self.tokenizer, t) for o, t in zip(outs, texts)]

    # -- verl's rollout worker API --------------------------------------------------------------
    def generate_sequences(self, prompts: DataProto, sampling_params: SamplingParams | None = None,
                           **kwargs: Any) -> DataProto:
        """verl's ``generate_sequences``: left-padded ``input_ids`` / ``attention_mask`` /
        ``position_ids`` (bs, prompt_length) in; one response per row out, right-padded to
        ``max_tokens`` (bs, response_length) with ``pad_token_id``:
        ``prompts, responses, input_ids, attention_mask, position_ids, response_mask, rollout_log_probs``.

        Consecutive identical prompt rows (``DataProto.repeat(n, interleave=True)``) become one
        request with ``n`` samples, so the prompt is prefilled once. ``meta_info`` may override
        ``temperature / top_p / top_k / max_tokens (response_length) / do_sample / seed``; with
        ``seed`` row ``i`` samples as a request seeded ``seed + i``.
        """
        batch = prompts.batch
        for key in ("input_ids", "attention_mask"):
            if batch is None or key not in batch:
                raise ValueError(f"generate_sequences: prompts.batch['{key}'] is missing")
        meta = {**prompts.meta_info, **kwargs}
        base = sampling_params if sampling_params is not None else SamplingParams()
        overrides = {
            "temperature": meta.get("temperature", base.temperature),
            "top_p": meta.get("top_p", base.top_p),
            "top_k": meta.get("top_k", base.top_k),
            "min_p": meta.get("min_p", base.min_p),
            "max_tokens": meta.get("max_tokens", meta.get("response_length", base.max_tokens)),
            "stop_token_ids": list(base.stop_token_ids), "ignore_eos": base.ignore_eos, "logprobs": True,
        }
        if meta.get("do_sample", True) is False:
            overrides["temperature"] = 0.0
        seed = meta.get("seed", base.seed)
        pad_id = meta.get("pad_token_id")
        if pad_id is None:
            pad_id = getattr(self.tokenizer, "pad_token_id", None) if self.tokenizer is not None else None
        pad_id = 0 if pad_id is None else int(pad_id)

        # The layout, the grouping of identical prompts and the seeds: C++'s generate_sequences (the trainer's own).
        tensors = {key: batch[key] for key in ("input_ids", "attention_mask", "position_ids") if key in batch}
        self._check_no_async_in_flight("generate_sequences")
        out = _C.trainer.generate_sequences(self.engine, _C.DataProto(tensors, {}, {}),
                                            SamplingParams(n=1, seed=None, **overrides), pad_token_id=pad_id,
                                            seed=None if seed is None else int(seed))
        out_batch = out.batch
        return DataProto.from_dict(tensors=out_batch, non_tensors=dict(prompts.non_tensor_batch),
                                   meta_info=dict(prompts.meta_info))

    # -- asyncio (an agent loop's requests, one by one, batched together) ------------------------
    async def generate_async(self, prompt_token_ids: Sequence[int],
                             sampling_params: SamplingParams | None = None) -> RequestOutput:
        """Generates for one prompt while other requests (from other tasks) are batched with it; returns its
        output. Cancelling the await aborts the request. Equal to ``generate`` for the same seeded request."""
        front = self._async_front()
        request_id, future = front.submit([int(t) for t in prompt_token_ids], sampling_params or SamplingParams(),
                                          stream=False)
        return await front.result(request_id, future)

    async def generate_stream(self, prompt_token_ids: Sequence[int],
                              sampling_params: SamplingParams | None = None):
        """Yields each token (``TokenDelta``: request_id, index, token_id, logprob) as it is sampled; the tokens of
        sample ``i`` concatenate to its ``generate_async`` output. Breaking out of the loop aborts the request."""
        front = self._async_front()
        request_id, future = front.submit([int(t) for t in prompt_token_ids], sampling_params or SamplingParams(),
                                          stream=True)
        async for delta in front.stream(request_id, future):
            yield delta

    def abort(self, request_id: int) -> bool:
        """Ends an async request now (its await returns the tokens so far, finish_reason "abort")."""
        return self._front is not None and self._front.abort(int(request_id))

    def _async_front(self):
        if self._front is None:
            from .async_front import AsyncFront

            self._front = AsyncFront(self.engine, lambda out: _to_request_output(out, self.tokenizer, None))
        return self._front

    def _check_no_async_in_flight(self, what: str) -> None:
        if self._front is not None and self._front.num_in_flight:
            raise RuntimeError(f"LLM.{what}: async requests are in flight; await them (or abort them) first")

    # -- weights and memory (the hybrid engine's hooks) -----------------------------------------
    def update_weights(self, named_tensors: Any) -> None:
        """Copies tensors into the bound model by HF name (a dict or (name, tensor) pairs)."""
        self.engine.update_weights(dict(named_tensors))

    def sleep(self, level: int = 1) -> None:
        """Releases the KV cache (vLLM's sleep; weights stay, they are the trainer's)."""
        self.engine.sleep()

    def wake_up(self) -> None:
        self.engine.wake_up()

    def stats(self) -> dict[str, int]:
        return self.engine.stats()


class RolloutReplicas:
    """Data-parallel replicas of ``LLM``: each request goes to the least-loaded replica, each replica
    generates in its own thread, results come back in input order."""

    def __init__(self, llms: Sequence[LLM]) -> None:
        if not llms:
            raise ValueError("RolloutReplicas: at least one LLM is needed")
        self.llms = list(llms)
        self._pool = _C.rollout.EnginePool([llm.engine for llm in self.llms])

    def generate(self, prompt_token_ids: Sequence[Sequence[int]],
                 sampling_params: SamplingParams | Sequence[SamplingParams]) -> list[RequestOutput]:
        params = [sampling_params] if isinstance(sampling_params, SamplingParams) else list(sampling_params)
        outs = self._pool.generate([[int(t) for t in p] for p in prompt_token_ids], params)
        return [_to_request_output(o, self.llms[0].tokenizer, None) for o in outs]

    @property
    def last_assignment(self) -> list[int]:
        return list(self._pool.last_assignment)
