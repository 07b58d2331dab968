"""The program-synthesis example's task and reward (examples/code): problems, hidden tests and the imperfect
teacher agree with the task's oracle, the committed tokenizer round-trips every program, and the reward -- verl's
prime_code scorer on the local sandbox -- gives the right programs 1.0 and the teacher's bugs the fractions the
oracle predicts (real sandbox runs, a handful). The full run's numbers are in examples/code/README.md."""

from __future__ import annotations

import importlib.util
import json
import os
import sys

import pytest

import verl

CODE_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "code")
sys.path.insert(0, CODE_DIR)
import code_reward  # noqa: E402
import code_task  # noqa: E402
# Loaded under its own name: several examples have a run.py, and the first "import run" of a pytest process
# would shadow the others.
run = importlib.util.module_from_spec(
    _spec := importlib.util.spec_from_file_location("code_example_run", os.path.join(CODE_DIR, "run.py")))
sys.modules["code_example_run"] = run
_spec.loader.exec_module(run)


def run_in_process(source: str, fn: str, x: int):
    """The reference programs are the task's own text, so they may run here (model output never does)."""
    namespace: dict = {}
    exec(source, namespace)  # noqa: S102
    return namespace[fn](x)


def test_splits_hold_out_operation_constant_pairs():
    train, test = code_task.generate_splits(1616, 400, seed=0)
    assert (train, test) == code_task.generate_splits(1616, 400, seed=0)
    assert code_task.generate_splits(1616, 400, seed=1) != (train, test)
    assert len(set(train)) == 1616 and len(set(test)) == 400
    pairs_train, pairs_test = {(p.op, p.k) for p in train}, {(p.op, p.k) for p in test}
    assert len(pairs_test) == 25 and not pairs_train & pairs_test  # 20 % of the 7 x 18 pairs, never trained on
    with pytest.raises(ValueError, match="distinct problems"):
        code_task.generate_splits(1617, 10)


def test_programs_tests_and_teacher_bugs_agree_with_the_oracle():
    problem = code_task.Problem("times", 7, "g", "n")
    assert code_task.problem_text(problem) == "Write a Python function g(n) that returns n times 7."
    assert code_task.program(problem) == "def g(n):\n    return n*7"
    defects = {d: 0 for d in code_task.DEFECTS}
    for p in code_task.all_problems():  # 2016 problems
        tests = code_task.hidden_tests(p)
        xs = [json.loads(x) for x in tests["inputs"]]
        assert tests["fn_name"] == p.fn and len(set(xs)) == 5
        assert sum(x < p.k for x in xs) == 2 and sum(x > p.k for x in xs) == 3
        for x, out in zip(xs, tests["outputs"]):
            assert run_in_process(code_task.program(p), p.fn, x) == json.loads(out) == code_task.reference(p, x)
        demo, defect = code_task.teacher_program(p, defect_rate=0.5, seed=0, copy=0)
        assert code_task.classify(p, demo) == (defect or "right")
        if defect is not None:
            defects[defect] += 1
            # every bug fails at least one of the problem's tests
            assert any(run_in_process(demo, p.fn, x) != json.loads(out) for x, out in zip(xs, tests["outputs"]))
    assert 0.45 <= sum(defects.values()) / 2016 <= 0.55 and min(defects.values()) > 250
    assert code_task.teacher_program(problem, 0.5, seed=0, copy=3) == code_task.teacher_program(problem, 0.5, 0, 3)
    assert code_task.classify(problem, "def g(n):\n    return n*7\n") == "right"
    assert code_task.classify(problem, "def g(x):\n    return x*7") == "other"


def test_committed_tokenizer_round_trips_prompts_and_programs():
    tok = verl.load_tokenizer(os.path.join(CODE_DIR, "tokenizer"))
    tokenizers = pytest.importorskip("tokenizers")
    ref = tokenizers.Tokenizer.from_file(os.path.join(CODE_DIR, "tokenizer", "tokenizer.json"))
    assert tok.eos_token_id == ref.token_to_id("<|im_end|>") and tok.pad_token_id == ref.token_to_id("<|endoftext|>")
    assert ref.get_vocab_size() == run.model_config(tok, 64, 2)["vocab_size"]
    for p in code_task.all_problems()[::7]:
        prompt = tok.apply_chat_template([{"role": "user", "content": code_task.problem_text(p)}],
                                         add_generation_prompt=True, tokenize=False)
        assert tok.encode(prompt) == ref.encode(prompt).ids and len(tok.encode(prompt)) <= run.MAX_PROMPT
        for copy in range(3):
            text = code_task.teacher_program(p, defect_rate=1.0 if copy else 0.0, copy=copy)[0]
            ids = tok.encode(text)
            assert tok.decode(ids) == text and len(ids) + 1 <= run.MAX_RESPONSE  # + the end-of-turn token


def test_sandbox_reward_scores_right_and_buggy_programs():
    reward = code_reward.SandboxReward()
    p = code_task.Problem("div", 9, "h", "v")
    tests = code_task.hidden_tests(p)
    xs = [json.loads(x) for x in tests["inputs"]]
    off_by_one = code_task.defect_variants(p)["off_by_one"][1]  # v//10
    expected = sum(code_task.reference(off_by_one, x) == code_task.reference(p, x) for x in xs) / 5
    responses = [code_task.program(p), code_task.program(p), code_task.program(off_by_one),
                 code_task.program(p, with_return=False), "def h(v):\n    return v//", "def f(v):\n    return v//5"]
    results = reward([code_task.DATA_SOURCE] * 6, responses, [json.dumps(tests)] * 6, [None] * 6)
    assert [r["score"] for r in results] == pytest.approx([1.0, 1.0, expected, 0.0, 0.0, 0.0])
    assert expected == 0.8  # v//10 == v//9 on four of the five inputs: a partial reward
    assert [r["acc"] for r in results] == [1.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    stats = reward.stats()  # the duplicate ran once: 5 distinct programs x 5 test cases
    assert (stats["samples"], stats["programs_run"], stats["sandbox_runs"]) == (6, 5, 25)
    assert reward([code_task.DATA_SOURCE], [responses[2]], [tests], [None])[0]["score"] == expected


def test_help_and_bad_arguments(capsys):
    with pytest.raises(SystemExit) as e:
        run.parse_args(["--help"])
    assert e.value.code == 0 and "local sandbox" in capsys.readouterr().out
    for bad, message in [(["--defect-rate", "1.5"], "--defect-rate"), (["--hidden", "66"], "--hidden"),
                         (["--rl-steps", "0"], "--rl-steps")]:
        with pytest.raises(SystemExit):
            run.parse_args(bad)
        assert message in capsys.readouterr().err
