"""``tool_agent`` against a scripted model and a scripted calculator tool, compared with a reference loop written
here from Qwen3's chat template as text (same ids, same masks, same log-probs); malformed calls answered with an
error message; the max_parallel_calls bound measured; truncation; turn limits; per-sample agent_name; the padded
DataProto."""

from __future__ import annotations

import asyncio
import json
import re

import numpy as np
import pytest
import torch

from verl.experimental.agent_loop import (AgentLoopBase, AgentLoopConfig, AgentLoopOutput, AgentLoopWorker,
                                          register, truncate_tool_response)
from verl.protocol import DataProto

from .conftest import CalculatorTool, ScriptedLLM

END = "<|im_end|>"


def call(a, b, name="add"):
    return '<tool_call>\n' + json.dumps({"name": name, "arguments": {"a": a, "b": b}}) + '\n</tool_call>'


def config(**multi_turn):
    return AgentLoopConfig(prompt_length=512, response_length=400,
                           multi_turn={"enable": True, "max_parallel_calls": 4, **multi_turn})


def turn_script(turns):
    """The model's k-th turn (k = number of tool responses in the prompt so far) is turns[k]."""
    def script(text, _ids):
        # the responses of one turn share one user block: count the blocks, not the responses
        k = text.count("<|im_start|>user\n<tool_response>")
        return turns[min(k, len(turns) - 1)]
    return script


def reference_rollout(tok, messages, tools, turns, tool_results):
    """Independent reference: the prompt from the template, then each model turn's ids (mask 1), then the tool
    block Qwen3's template renders after an assistant turn, written out as text (mask 0)."""
    prompt = tok.apply_chat_template(messages, tools=tools, add_generation_prompt=True, tokenize=True)
    ids, mask, logprobs = [], [], []
    for k, turn in enumerate(turns):
        t = tok.encode(turn, add_special_tokens=False)
        ids += t
        mask += [1] * len(t)
        logprobs += [-(0.01 * i + 0.5) for i in range(len(t))]
        if k < len(tool_results):
            block = "\n<|im_start|>user\n" + "\n".join(f"<tool_response>\n{r}\n</tool_response>" for r in tool_results[k]) \
                + "<|im_end|>\n<|im_start|>assistant\n"
            b = tok.encode(block, add_special_tokens=False)
            ids += b
            mask += [0] * len(b)
            logprobs += [0.0] * len(b)
    return prompt, ids, mask, logprobs


def test_tool_loop_equals_the_reference_loop(qwen3):
    turns = ["Let me add." + call(3, 4) + END,
             call(7, 5) + "\n" + call(1, 1) + END,  # two parallel calls
             "The answer is 12." + END]
    tool = CalculatorTool({})
    llm = ScriptedLLM(qwen3, turn_script(turns))
    worker = AgentLoopWorker(llm, qwen3, config(), tools=[tool])
    messages = [{"role": "user", "content": "What is 3 + 4, then 7 + 5?"}]
    out, = worker.run([{"raw_prompt": messages, "agent_name": "tool_agent"}], {"temperature": 1.0})

    schemas = [tool.tool_schema.model_dump(exclude_unset=True, exclude_none=True)]
    prompt, ids, mask, logprobs = reference_rollout(qwen3, messages, schemas, turns, [["7"], ["12", "2"]])
    assert out.prompt_ids == prompt
    assert out.response_ids == ids
    assert out.response_mask == mask
    assert out.response_logprobs == pytest.approx(logprobs)
    # the prompt of every turn = the previous prompt + the model's ids + the tool block's ids
    # (each request's prompt ends where a tool block ends: after a 0 of the mask that a 1 follows)
    ends = [len(prompt)] + [len(prompt) + j + 1 for j in range(len(mask) - 1) if mask[j] == 0 and mask[j + 1] == 1]
    assert [p for p, _ in llm.requests] == [(prompt + ids)[:e] for e in ends]
    assert [r.max_tokens for _, r in llm.requests] == [400 - (e - len(prompt)) for e in ends]  # the response budget
    assert out.num_turns == 2 + 3 + 1  # two tool turns, three assistant turns, the prompt
    ex = out.extra_fields
    assert (ex["tool_call_counts"], ex["num_tool_call_errors"], ex["num_assistant_turns"], ex["num_user_turns"]) == (3, 0, 3, 2)
    assert ex["tool_rewards"] == [1.0, 0.0, 0.0]
    assert len(tool.created) == 3 and sorted(tool.released) == sorted(tool.created)
    # the decoded trajectory reads as the conversation
    text = qwen3.decode(out.response_ids)
    assert text.count("<tool_response>") == 3 and text.endswith("The answer is 12." + END)


def test_malformed_unknown_and_failing_calls_become_error_messages(qwen3):
    turns = ['<tool_call>\n{"name": "add", "arguments": {"a": 1,}}\n</tool_call>'  # bad JSON
             + '<tool_call>\n{"name": "mul", "arguments": {"a": 1, "b": 2}}\n</tool_call>'  # unknown tool
             + '<tool_call>\n{"name": "add", "arguments": {"a": "x", "b": 2}}\n</tool_call>'  # the tool raises
             + '<tool_call>\n["add"]\n</tool_call>' + END,  # not an object
             'fine' + END]
    tool = CalculatorTool({})
    worker = AgentLoopWorker(ScriptedLLM(qwen3, turn_script(turns)), qwen3, config(), tools=[tool])
    out, = worker.run([{"raw_prompt": [{"role": "user", "content": "hi"}], "agent_name": "tool_agent"}], {})
    text = qwen3.decode(out.response_ids)
    responses = re.findall(r"<tool_response>\n(.*?)\n</tool_response>", text, re.DOTALL)
    assert len(responses) == 4
    assert responses[0].startswith("Error: the tool call is not valid JSON")
    assert responses[1] == "Error: unknown function 'mul'. Available tools: ['add']"
    assert responses[2].startswith("Error executing tool 'add': ValueError: invalid literal for int()")
    assert responses[3] == "Error: the tool call must be a JSON object with 'name' and 'arguments', got list"
    assert out.extra_fields["num_tool_call_errors"] == 4 and out.extra_fields["tool_call_counts"] == 0
    assert tool.released == tool.created and len(tool.created) == 1  # released after the failure
    assert out.num_turns == 4


def test_partial_call_cut_by_the_response_length(qwen3):
    # the turn is cut inside its <tool_call> by max_tokens: the loop ends (the response is full), no crash
    turns = ["x" * 10 + call(3, 4) + END]
    cfg = AgentLoopConfig(prompt_length=512, response_length=8, multi_turn={"enable": True})
    worker = AgentLoopWorker(ScriptedLLM(qwen3, turn_script(turns)), qwen3, cfg, tools=[CalculatorTool({})])
    out, = worker.run([{"raw_prompt": [{"role": "user", "content": "hi"}], "agent_name": "tool_agent"}], {})
    assert len(out.response_ids) == 8 and out.response_mask == [1] * 8 and out.num_turns == 2


def test_turn_cut_before_its_end_token_gets_the_template_closing(qwen3):
    # sampling max_tokens cuts the turn after its call: the tool block then starts by closing the assistant turn
    turns = [call(3, 4) + " and some more words that do not fit" + END, "ok" + END]
    worker = AgentLoopWorker(ScriptedLLM(qwen3, turn_script(turns)), qwen3, config(), tools=[CalculatorTool({})])
    first = qwen3.encode(call(3, 4) + " and some", add_special_tokens=False)
    out, = worker.run([{"raw_prompt": [{"role": "user", "content": "go"}], "agent_name": "tool_agent"}],
                      {"max_tokens": len(first)})
    block = qwen3.encode("<|im_end|>\n<|im_start|>user\n<tool_response>\n7\n</tool_response><|im_end|>\n"
                         "<|im_start|>assistant\n", add_special_tokens=False)
    second = qwen3.encode("ok" + END, add_special_tokens=False)
    assert out.response_ids == first + block + second
    assert out.response_mask == [1] * len(first) + [0] * len(block) + [1] * len(second)


def test_max_parallel_calls_bounds_the_calls_run_at_once(qwen3):
    turns = ["".join(call(i, 1) for i in range(6)) + END, "done" + END]
    for bound in (1, 3, 6):
        tool = CalculatorTool({}, delay=0.05)
        worker = AgentLoopWorker(ScriptedLLM(qwen3, turn_script(turns)), qwen3, config(max_parallel_calls=bound),
                                 tools=[tool])
        out, = worker.run([{"raw_prompt": [{"role": "user", "content": "go"}], "agent_name": "tool_agent"}], {})
        assert tool.peak_running == bound  # they overlap, and never more than the bound
        responses = re.findall(r"<tool_response>\n(.*?)\n</tool_response>", qwen3.decode(out.response_ids))
        assert responses == [str(i + 1) for i in range(bound)]  # the first `bound` calls, in order (verl drops the rest)
        assert out.extra_fields["num_dropped_tool_calls"] == 6 - bound


def test_truncation_of_tool_responses():
    text = "abcdefghij" * 3
    assert truncate_tool_response(text, 30, "left") == text
    assert truncate_tool_response(text, 8, "left") == "(truncated)..." + text[-8:]
    assert truncate_tool_response(text, 8, "right") == text[:8] + "...(truncated)"
    assert truncate_tool_response(text, 8, "middle") == "abcd...(truncated)...ghij"


@pytest.mark.parametrize("side,expected", [("right", "1234...(truncated)"), ("left", "(truncated)...7890"),
                                           ("middle", "12...(truncated)...90")])
def test_tool_response_truncated_in_the_context(qwen3, side, expected):
    from verl.tools.function_tool import FunctionTool

    def digits() -> str:
        """Ten digits."""
        return "1234567890"

    turns = ['<tool_call>\n{"name": "digits", "arguments": {}}\n</tool_call>' + END, "ok" + END]
    worker = AgentLoopWorker(ScriptedLLM(qwen3, turn_script(turns)), qwen3,
                             config(max_tool_response_length=4, tool_response_truncate_side=side),
                             tools=[FunctionTool.from_function(digits)])
    out, = worker.run([{"raw_prompt": [{"role": "user", "content": "go"}], "agent_name": "tool_agent"}], {})
    assert re.findall(r"<tool_response>\n(.*?)\n</tool_response>", qwen3.decode(out.response_ids)) == [expected]


@pytest.mark.parametrize("limits,assistant,user", [({"max_assistant_turns": 2}, 2, 1), ({"max_user_turns": 1}, 2, 1),
                                                   ({"max_assistant_turns": 4}, 4, 3), ({}, 5, 4)])
def test_turn_limits(qwen3, limits, assistant, user):
    always = call(3, 4) + END  # a model that never stops calling
    cfg = AgentLoopConfig(prompt_length=512, response_length=10_000, multi_turn={"enable": True, **limits})
    llm = ScriptedLLM(qwen3, lambda text, ids: always if text.count("<tool_response>") < 4 else "stop" + END)
    worker = AgentLoopWorker(llm, qwen3, cfg, tools=[CalculatorTool({})])
    out, = worker.run([{"raw_prompt": [{"role": "user", "content": "go"}], "agent_name": "tool_agent"}], {})
    ex = out.extra_fields
    assert (ex["num_assistant_turns"], ex["num_user_turns"]) == (assistant, user)
    assert out.num_turns == assistant + user + 1
    # mask runs: assistant turns are the runs of 1s, tool turns the runs of 0s
    runs = [k for k, prev in zip(out.response_mask, [None] + out.response_mask[:-1]) if k != prev]
    assert runs.count(1) == assistant and runs.count(0) == user


def test_samples_run_concurrently_each_in_its_agent_loop(qwen3):
    @register("echo_agent")
    class EchoAgent(AgentLoopBase):
        """A user-defined loop through verl's server_manager API: repeats the prompt's last 3 ids."""

        async def run(self, sampling_params, **kwargs):
            prompt = self.tokenizer.encode(kwargs["raw_prompt"][-1]["content"], add_special_tokens=False)
            out = await self.server_manager.generate(request_id="x", prompt_ids=prompt,
                                                     sampling_params={**sampling_params, "max_tokens": 3})
            return AgentLoopOutput(prompt_ids=prompt, response_ids=out.token_ids, response_mask=[1] * len(out.token_ids),
                                   num_turns=2)

    turns = [call(3, 4) + END, "seven" + END]
    llm = ScriptedLLM(qwen3, turn_script(turns), delay=0.05)
    tool = CalculatorTool({}, delay=0.05)
    worker = AgentLoopWorker(llm, qwen3, config(), tools=[tool])
    samples = []
    for i in range(6):
        agent = ["tool_agent", "single_turn_agent", "echo_agent", None][i % 4]
        samples.append({"raw_prompt": [{"role": "user", "content": f"question {i}"}],
                        **({"agent_name": agent} if agent else {})})
    outs = worker.run(samples, {"temperature": 0.0})
    assert llm.peak_in_flight == 6  # every sample's first turn was in flight at once
    tool_rows = [0, 4]
    for i, out in enumerate(outs):
        if i in tool_rows:
            assert out.num_turns == 4 and 0 in out.response_mask
        elif i % 4 == 2:
            assert out.num_turns == 2 and len(out.response_ids) == 3
        else:  # single_turn_agent (named, or the default for a sample without agent_name)
            assert out.num_turns == 2 and out.response_mask == [1] * len(out.response_ids)
            assert qwen3.decode(out.response_ids) == call(3, 4) + END  # single turn: no tool is run
    with pytest.raises(ValueError, match="unknown agent loop 'nope'"):
        worker.run([{"raw_prompt": [{"role": "user", "content": "q"}], "agent_name": "nope"}], {})


def test_generate_sequences_pads_as_verl(qwen3):
    turns = [call(3, 4) + END, "7" + END]
    cfg = AgentLoopConfig(prompt_length=200, response_length=80, multi_turn={"enable": True},
                          agent={"default_agent_loop": "tool_agent"})
    worker = AgentLoopWorker(ScriptedLLM(qwen3, turn_script(turns)), qwen3, cfg, tools=[CalculatorTool({})])
    raw = np.empty(2, dtype=object)
    raw[0] = [{"role": "user", "content": "a"}]
    raw[1] = [{"role": "user", "content": "a longer question"}]
    names = np.array(["tool_agent", "single_turn_agent"], dtype=object)
    batch = DataProto.from_dict(tensors={"dummy": torch.zeros(2, 1)}, non_tensors={"raw_prompt": raw, "agent_name": names})
    out = worker.generate_sequences(batch)
    outs = worker.run([{"raw_prompt": raw[0]}, {"raw_prompt": raw[1], "agent_name": "single_turn_agent"}], {})
    b = out.batch
    assert b["prompts"].shape == (2, 200) and b["responses"].shape == (2, 80) and b["input_ids"].shape == (2, 280)
    for i, o in enumerate(outs):
        n_p, n_r = len(o.prompt_ids), len(o.response_ids)
        assert b["prompts"][i, 200 - n_p:].tolist() == o.prompt_ids
        assert (b["prompts"][i, :200 - n_p] == qwen3.pad_token_id).all()
        assert b["responses"][i, :n_r].tolist() == o.response_ids
        assert b["response_mask"][i, :n_r].tolist() == o.response_mask and b["response_mask"][i, n_r:].sum() == 0
        assert b["attention_mask"][i].sum() == n_p + n_r
        assert b["position_ids"][i, 200 - n_p:200 + n_r].tolist() == list(range(n_p + n_r))
        torch.testing.assert_close(b["rollout_log_probs"][i, :n_r], torch.tensor(o.response_logprobs))
    assert out.non_tensor_batch["__num_turns__"].tolist() == [4, 2]
