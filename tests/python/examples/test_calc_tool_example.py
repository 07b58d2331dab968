"""examples/calc_tool: the pieces the run depends on, checked on their own (the run's numbers are in its README).

The chat template renders the teacher's tool conversation so that the agent loop's hermes parser reads the call
back; the SFT rows train on exactly the assistant turns, with the very token ids the agent loop produces for the
same conversation (prompt with the tools block, tool turn appended after the model's end-of-turn token); the
plain-function tool's schema is the one SFT renders; the reward on known responses; the calculator's results and
its errors on bad expressions."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys

import pytest

CALC_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "calc_tool")
sys.path.insert(0, CALC_DIR)
import build_tokenizer  # noqa: E402
import calc_task  # noqa: E402
from calculator import TOOL_SCHEMA, calculator  # noqa: E402

from verl.experimental.agent_loop.chat_tokens import ChatTokens  # noqa: E402
from verl.experimental.agent_loop.tool_parser import HermesToolParser  # noqa: E402
from verl.tokenizer import load_tokenizer  # noqa: E402
from verl.tools.function_tool import FunctionTool  # noqa: E402
from verl.utils.dataset.sft_dataset import SFTDataset  # noqa: E402

CALL_TURN = '<tool_call>\n{"name": "calculator", "arguments": {"expression": "37*48"}}\n</tool_call><|im_end|>'
TOOL_TURN = "\n<|im_start|>user\n<tool_response>\n1776\n</tool_response><|im_end|>\n<|im_start|>assistant\n"


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer(os.path.join(CALC_DIR, "tokenizer"))


def tool_conversation():
    return [{"role": "user", "content": "Compute 37*48."}] + calc_task.tool_call_messages(37, 48)


def test_committed_tokenizer_matches_its_builder(tok):
    with open(os.path.join(CALC_DIR, "tokenizer", "tokenizer_config.json"), encoding="utf-8") as f:
        assert json.load(f)["chat_template"] == build_tokenizer.CHAT_TEMPLATE
    # verl-cpp's tokenizer renders the template as the builder's jinja2 rendering (the BPE was trained on that)
    messages = tool_conversation()
    assert tok.apply_chat_template(messages, tools=[TOOL_SCHEMA], tokenize=False) == build_tokenizer.render(
        messages, [TOOL_SCHEMA])
    # the tool tags are single tokens that decoding keeps (not special), the turn markers are special
    for tag in build_tokenizer.TOOL_TOKENS:
        ids = tok.encode(tag, add_special_tokens=False)
        assert len(ids) == 1 and tok.decode(ids, skip_special_tokens=True) == tag
    assert tok.decode(tok.encode("<|im_end|>", add_special_tokens=False), skip_special_tokens=True) == ""
    assert tok.eos_token == "<|im_end|>" and tok.pad_token == "<|endoftext|>"


def test_template_renders_a_tool_call_the_hermes_parser_reads_back(tok):
    text = tok.apply_chat_template(tool_conversation(), tools=[TOOL_SCHEMA], tokenize=False)
    assert text.startswith("<|im_start|>system\n<tools>\n" + json.dumps(TOOL_SCHEMA) + "\n</tools><|im_end|>\n"
                           "<|im_start|>user\nCompute 37*48.<|im_end|>\n<|im_start|>assistant\n")
    assert text.endswith("<|im_start|>assistant\n" + CALL_TURN + "\n<|im_start|>user\n<tool_response>\n1776\n"
                         "</tool_response><|im_end|>\n<|im_start|>assistant\nThe answer is 1776.<|im_end|>\n")
    # the model's turn as token ids, parsed by the agent loop's parser
    ids = tok.encode(CALL_TURN, add_special_tokens=False)
    content, calls = asyncio.run(HermesToolParser(tok).extract_tool_calls(ids))
    assert content == "<|im_end|>" and len(calls) == 1
    assert calls[0].name == "calculator" and calls[0].error is None
    assert json.loads(calls[0].arguments) == {"expression": "37*48"}
    assert calculator(**json.loads(calls[0].arguments)) == "1776"


def test_function_tool_schema_is_the_one_sft_renders():
    schema = FunctionTool.from_function(calculator).tool_schema.model_dump(exclude_unset=True, exclude_none=True)
    assert json.dumps(schema) == json.dumps(TOOL_SCHEMA)  # same keys in the same order: the same tools block


def test_sft_targets_are_the_assistant_turns_with_the_agent_loops_ids(tok, tmp_path):
    rows = [{"messages": tool_conversation()},
            {"messages": [{"role": "user", "content": "Compute 12*34."},
                          {"role": "assistant", "content": "The answer is 408."}]}]
    path = tmp_path / "sft.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    data = SFTDataset(str(path), tok, {"apply_chat_template_kwargs": {"tools": [TOOL_SCHEMA]}, "max_length": 160})

    def target_runs(item):
        ids, mask = data[item]["input_ids"].tolist(), data[item]["loss_mask"].tolist()
        runs, current = [], []
        for token, m in zip(ids, mask):
            if m:
                current.append(token)
            elif current:
                runs.append(tok.decode(current)), current.clear()
        return runs + ([tok.decode(current)] if current else [])

    assert target_runs(0) == [CALL_TURN + "\n", "The answer is 1776.<|im_end|>\n"]
    assert target_runs(1) == ["The answer is 408.<|im_end|>\n"]

    # The same conversation as the tool_agent loop builds it: the prompt with the tools block, the model's call
    # turn, the tool turn appended after its <|im_end|>, the answer turn. SFT trained on exactly these ids (its
    # answer turn also has the "\n" after <|im_end|>, where the rollout stops).
    chat = ChatTokens(tok)
    messages = tool_conversation()
    prompt = chat.initial_prompt_ids(messages[:1], [TOOL_SCHEMA])
    call = tok.encode(CALL_TURN, add_special_tokens=False)
    tool_turn = chat.appended_message_ids([messages[2]], [TOOL_SCHEMA], last_generated_id=call[-1])
    assert tool_turn == tok.encode(TOOL_TURN, add_special_tokens=False)
    answer = tok.encode("The answer is 1776.<|im_end|>", add_special_tokens=False)
    assert data[0]["input_ids"].tolist()[:-1] == prompt + call + tool_turn + answer
    assert len(prompt) <= 96 and len(call + tool_turn + answer) <= 64  # run.py's prompt and response lengths


def test_reward_reads_the_final_answer_of_the_decoded_response(tok):
    response_ids = tok.encode(CALL_TURN + TOOL_TURN + "The answer is 1776.<|im_end|>", add_special_tokens=False)
    for skip in (True, False):  # whichever way the reward manager decodes
        text = tok.decode(response_ids, skip_special_tokens=skip)
        assert calc_task.final_answer(text) == "The answer is 1776."
        assert calc_task.compute_score("calc_tool", text, "1776") == {"score": 1.0, "acc": 1.0, "tool_call": 1.0}
        assert calc_task.compute_score("calc_tool", text, "1777")["score"] == 0.0
        # the tool answered but the model never did (turn limit): the tool's number is not the model's answer
        unanswered = tok.decode(tok.encode(CALL_TURN + TOOL_TURN, add_special_tokens=False), skip_special_tokens=skip)
        assert calc_task.compute_score("calc_tool", unanswered, "1776") == {"score": 0.0, "acc": 0.0,
                                                                            "tool_call": 1.0}
    direct = "The answer is 1776."
    assert calc_task.compute_score("calc_tool", direct, "1776") == {"score": 1.0, "acc": 1.0, "tool_call": 0.0}
    assert calc_task.compute_score("calc_tool", f" {direct}<|im_end|>", "1776")["score"] == 1.0
    for wrong in ("The answer is 1786.", "1776", "The answer is 1776", "The answer is 1776.0.", "answer 1776", ""):
        assert calc_task.compute_score("calc_tool", wrong, "1776")["score"] == 0.0


@pytest.mark.parametrize("expression, result", [
    ("37*48", "1776"), ("99*99", "9801"), ("2+3*4", "14"), ("(2+3)*4", "20"), (" 7 - 10 ", "-3"), ("-3--4", "1"),
    ("1/4", "0.25"), ("10/3", "3.33333333333"), ("1.5*2", "3"), ("12345678901*98765432109", "1219326311336229232209"),
])
def test_calculator_results(expression, result):
    assert calculator(expression) == result


@pytest.mark.parametrize("expression, message", [
    ("", "empty expression"), ("3+", "expected a number at the end of '3+'"),
    ("3%4", "unexpected '%' at position 1"), ("2**3", "expected a number or '(' but found '*' at position 2"),
    ("(1+2", "expected ')' at the end of"), ("1 2", "unexpected '2' at position 2"),
    ("7/(3-3)", "division by zero"), ("1.", "without digits after '.'"),
    ("__import__('os').system('ls')", "found '_' at position 0"),
    ("(" * 40 + "1" + ")" * 40, "nests deeper than 32"), ("1+" * 150 + "1", "at most 200"),
    (1234, "must be a string"),
])
def test_calculator_errors_name_the_problem(expression, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        calculator(expression)


def test_splits_are_disjoint_and_the_teacher_is_seeded(tmp_path):
    train, test = calc_task.generate_splits(4000, 400, seed=0)
    assert len(set(train)) == 4000 and len(set(test)) == 400 and not set(train) & set(test)
    assert all(10 <= a <= 99 and 10 <= b <= 99 for a, b in train + test)
    assert (train, test) == calc_task.generate_splits(4000, 400, seed=0)
    with pytest.raises(ValueError, match="8100"):
        calc_task.generate_splits(8000, 101)
    conversations = [calc_task.teacher_messages(a, b, 0.3, seed=0) for a, b in train]
    used = [len(c) == 4 for c in conversations]
    assert 0.27 <= sum(used) / len(used) <= 0.33
    assert all(c[-1] == {"role": "assistant", "content": f"The answer is {a * b}."}
               for c, (a, b) in zip(conversations, train))
    assert conversations == [calc_task.teacher_messages(a, b, 0.3, seed=0) for a, b in train]
    paths = calc_task.write_dataset(str(tmp_path), n_train=20, n_test=5, tool_rate=0.3)
    with open(paths["test"], encoding="utf-8") as f:
        row = json.loads(f.readline())
    assert row["agent_name"] == "tool_agent" and row["data_source"] == "calc_tool"
    a, b = map(int, row["prompt"][0]["content"][len("Compute "):-1].split("*"))
    assert row["reward_model"]["ground_truth"] == str(a * b)
