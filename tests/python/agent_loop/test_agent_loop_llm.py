"""``tool_agent`` end to end on the real ``LLM`` (C++ engine, generate_async) with a tiny model whose weights force
its output: attention and MLP write nothing (o_proj, down_proj = 0), so the next token depends on the last one only,
and embeddings / LM head encode a successor table that spells a hermes tool call after the generation prompt's
"\\n", then <|im_end|>. Every assistant turn therefore calls ``add`` until max_assistant_turns; the checks are the
invariants: the ids and masks turn by turn, the log-probs of the model's tokens, turn counts, and samples of several
agent loops batched together by the engine."""

from __future__ import annotations

import pytest
import torch

from verl.experimental.agent_loop import AgentLoopConfig, AgentLoopWorker
from verl.rollout import LLM

from .conftest import CalculatorTool, forced_tool_call_model


@pytest.fixture(scope="module")
def forced_llm(qwen3):
    model, chain = forced_tool_call_model(qwen3)
    return LLM(model, qwen3, block_size=8, max_num_seqs=16), chain


def test_forced_tool_calls_end_to_end(qwen3, forced_llm):
    llm, chain = forced_llm
    tool = CalculatorTool({})
    cfg = AgentLoopConfig(prompt_length=1024, response_length=300,
                          multi_turn={"enable": True, "max_assistant_turns": 3, "max_parallel_calls": 2})
    worker = AgentLoopWorker(llm, qwen3, cfg, tools=[tool])
    samples = [{"raw_prompt": [{"role": "user", "content": f"What is 3 + 4? ({i})"}],
                "agent_name": "tool_agent" if i % 2 == 0 else "single_turn_agent"} for i in range(6)]
    outs = worker.run(samples, {"temperature": 1.0, "seed": 7})

    schemas = [tool.tool_schema.model_dump(exclude_unset=True, exclude_none=True)]
    block = qwen3.encode("\n<|im_start|>user\n<tool_response>\n7\n</tool_response><|im_end|>\n<|im_start|>assistant\n",
                         add_special_tokens=False)
    for i, out in enumerate(outs):
        if i % 2 == 0:
            assert out.prompt_ids == qwen3.apply_chat_template(samples[i]["raw_prompt"], tools=schemas,
                                                               add_generation_prompt=True, tokenize=True)
            assert out.response_ids == chain + block + chain + block + chain
            assert out.response_mask == [1] * len(chain) + [0] * len(block) + [1] * len(chain) + [0] * len(block) \
                + [1] * len(chain)
            assert out.num_turns == 3 + 2 + 1
            assert out.extra_fields["tool_call_counts"] == 2 and out.extra_fields["tool_rewards"] == [1.0, 1.0]
        else:
            assert out.prompt_ids == qwen3.apply_chat_template(samples[i]["raw_prompt"], add_generation_prompt=True,
                                                               tokenize=True)
            assert out.response_ids == chain and out.response_mask == [1] * len(chain) and out.num_turns == 2
        model_lp = torch.tensor([lp for lp, m in zip(out.response_logprobs, out.response_mask) if m])
        tool_lp = [lp for lp, m in zip(out.response_logprobs, out.response_mask) if not m]
        assert bool((model_lp < 0).all()) and float(model_lp.min()) > -1e-3  # forced tokens: probability ~1
        assert tool_lp == [0.0] * len(tool_lp)
    stats = llm.stats()
    assert stats["num_free_blocks"] == stats["num_blocks"]  # every turn's request finished and freed its blocks
