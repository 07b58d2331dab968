"""verl-cpp's rollout engine: paged KV cache, continuous batching, prefix sharing of the ``n``
samples of a prompt, and per-request reproducible sampling, on the same C++ model code the
trainer uses (so the reported log-probs are the trainer's log-probs).

``LLM`` and ``SamplingParams`` follow vLLM's names; ``LLM.generate_sequences`` follows verl's
rollout worker (``DataProto`` in, ``prompts/responses/.../rollout_log_probs`` out);
``LLM.generate_async`` / ``generate_stream`` serve asyncio callers (an agent loop's turns) one request at a time
while the engine batches them all.
"""

from .llm import LLM, CompletionOutput, RequestOutput, RolloutReplicas, SamplingParams, TokenDelta

__all__ = ["LLM", "SamplingParams", "RequestOutput", "CompletionOutput", "RolloutReplicas", "TokenDelta"]
