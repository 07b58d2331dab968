"""Agent loop fixtures: the Qwen3 tokenizer (its chat template renders tools and tool messages), a scripted stand-in
for ``LLM.generate_async`` (same contract: prompt ids + SamplingParams in, a RequestOutput out) for the deterministic
loop tests, and a scripted calculator tool."""

from __future__ import annotations

import asyncio
import json
import os

import pytest
import torch

from verl import _C
from verl.models.transformer import CausalLM
from verl.rollout.llm import CompletionOutput, RequestOutput
from verl.tools.base_tool import BaseTool
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
QWEN3_DIR = os.path.join(REPO_ROOT, "tests", "fixtures", "qwen3-tokenizer")

ADD_SCHEMA = {"type": "function", "function": {
    "name": "add", "description": "Add two integers.",
    "parameters": {"type": "object", "properties": {"a": {"type": "integer", "description": "first"},
                                                     "b": {"type": "integer", "description": "second"}},
                   "required": ["a", "b"]}}}


@pytest.fixture(scope="session")
def qwen3():
    from verl.tokenizer import load_tokenizer

    return load_tokenizer(QWEN3_DIR)


class ScriptedLLM:
    """``generate_async`` answering with ``script(prompt_text, prompt_ids)``: a string, encoded (the script writes the
    end-of-turn token itself), cut at ``max_tokens`` (finish "length"). Log-probs are -(0.01 * position + 0.5) so they can be checked. Records
    every request's prompt ids and the peak number of requests in flight."""

    def __init__(self, tokenizer, script, delay: float = 0.0):
        self.tokenizer, self.script, self.delay = tokenizer, script, delay
        self.requests: list[tuple[list[int], object]] = []
        self.in_flight = self.peak_in_flight = 0
        self._next_id = 0

    async def generate_async(self, prompt_ids, sampling_params=None):
        self.requests.append((list(prompt_ids), sampling_params))
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.delay)
            text = self.script(self.tokenizer.decode(prompt_ids), prompt_ids)
            ids = self.tokenizer.encode(text, add_special_tokens=False)
            max_tokens = sampling_params.max_tokens if sampling_params is not None else 16
            reason = "stop"
            if len(ids) > max_tokens:
                ids, reason = ids[:max_tokens], "length"
            logprobs = [-(0.01 * i + 0.5) for i in range(len(ids))]
            self._next_id += 1
            return RequestOutput(self._next_id, list(prompt_ids), [CompletionOutput(0, ids, logprobs, reason)])
        finally:
            self.in_flight -= 1


class CalculatorTool(BaseTool):
    """add(a, b) -> the sum as text, reward 1.0 when the sum is 7; records create / release and concurrency."""

    def __init__(self, config, tool_schema=None, delay: float = 0.0):
        super().__init__(config, tool_schema or OpenAIFunctionToolSchema.model_validate(ADD_SCHEMA))
        self.delay = config.get("delay", delay)
        self.created: list[str] = []
        self.released: list[str] = []
        self.running = self.peak_running = 0

    async def create(self, instance_id=None, **kwargs):
        instance_id, response = await super().create(instance_id, **kwargs)
        self.created.append(instance_id)
        return instance_id, response

    async def execute(self, instance_id, parameters, **kwargs):
        self.running += 1
        self.peak_running = max(self.peak_running, self.running)
        try:
            await asyncio.sleep(self.delay)
            total = int(parameters["a"]) + int(parameters["b"])
            return ToolResponse(text=str(total)), 1.0 if total == 7 else 0.0, {}
        finally:
            self.running -= 1

    async def release(self, instance_id, **kwargs):
        self.released.append(instance_id)


HIDDEN = 32
CALL_TEXT = '<tool_call>{"name":"add","arguments":{"a":3,"b" :4}}</tool_call><|im_end|>'  # every token distinct


def forced_tool_call_model(qwen3):
    """A tiny Qwen2 model (a verl.models CausalLM) whose weights force its output: attention and MLP write nothing
    (o_proj, down_proj = 0), so the next token depends on the last one only, and embeddings / LM head encode a
    successor table that spells CALL_TEXT -- a hermes call of ``add`` -- after the generation prompt's "\\n", then
    <|im_end|>. Returns (model, CALL_TEXT's ids)."""
    chain = qwen3.encode(CALL_TEXT, add_special_tokens=False)
    newline = qwen3.encode("\n", add_special_tokens=False)
    tokens = newline + chain  # "\n" -> <tool_call> -> ... -> <|im_end|>
    assert len(set(tokens)) == len(tokens), "the successor table needs distinct tokens"
    vocab = len(qwen3)
    config = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "vocab_size": vocab, "hidden_size": HIDDEN,
              "intermediate_size": 32, "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2,
              "max_position_embeddings": 4096, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
              "tie_word_embeddings": False, "eos_token_id": qwen3.eos_token_id}
    module = _C.model.CausalLM(json.dumps(config))
    _C.model.init_weights(module, seed=0, initializer_range=0.02)
    model = CausalLM._from_module(module)
    state = model.state_dict()
    embed = torch.zeros(vocab, HIDDEN)
    head = torch.zeros(vocab, HIDDEN)
    for code, (token, successor) in enumerate(zip(tokens[:-1], tokens[1:])):
        embed[token, code] = 1.0
        head[successor, code] = 4.0  # logit gap 4 * sqrt(HIDDEN) ~ 23: the successor has probability ~1
    updates = {"model.embed_tokens.weight": embed, "lm_head.weight": head}
    for name, tensor in state.items():
        if name.endswith("o_proj.weight") or name.endswith("down_proj.weight"):
            updates[name] = torch.zeros_like(tensor)
    model.load_state_dict({**state, **updates})
    return model, chain
