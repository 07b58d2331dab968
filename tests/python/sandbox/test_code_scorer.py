"""verl's prime_code scorer on the local sandbox: correct, wrong and partly correct programs, standard-input and
function-call tests, the APPS harness's output tolerances, and the trainer's config wiring of the sandbox keys."""

from __future__ import annotations

import json
import threading

import pytest

import verl
from verl.trainer.ppo.reward import load_reward_manager, sandbox_fusion_kwargs
from verl.utils.reward_score import default_compute_score, prime_code
from verl.utils.reward_score.prime_code.testing_util import compare_call_result, compare_stdout

SQUARES = {"inputs": [f"{i}\n" for i in range(11)], "outputs": [f"{i * i}\n" for i in range(11)]}


def program(body: str) -> str:
    return f"Here is my solution.\n```python\n{body}\n```\nDone."


def test_stdin_programs_correct_wrong_and_partial(sandbox):
    correct = program("n = int(input())\nprint(n * n)")
    assert prime_code.compute_score(correct, json.dumps(SQUARES), continuous=True, sandbox=sandbox)[0] == 1.0
    doubles = program("print(int(input()) * 2)")
    score, meta = prime_code.compute_score(doubles, SQUARES, continuous=True, sandbox=sandbox)
    assert score == pytest.approx(2 / 10)  # 2n == n * n for n = 0 and 2 only, of the first 10 cases
    assert meta[1]["error_message"] == "Wrong Answer" and meta[1]["output"] == "2\n"
    # right for n < 7 only: 7 of the first 10 in continuous mode; not all, so 0 otherwise
    partial = program("n = int(input())\nprint(n * n if n < 7 else -1)")
    assert prime_code.compute_score(partial, SQUARES, continuous=True, sandbox=sandbox)[0] == pytest.approx(0.7)
    assert prime_code.compute_score(partial, SQUARES, continuous=False, sandbox=sandbox)[0] == 0.0
    # wrong only beyond the 10 cases continuous mode looks at
    late = program("n = int(input())\nprint(n * n if n < 10 else 0)")
    assert prime_code.compute_score(late, SQUARES, continuous=True, sandbox=sandbox)[0] == 1.0
    assert prime_code.compute_score(late, SQUARES, continuous=False, sandbox=sandbox)[0] == 0.0


def test_verdicts_for_errors(sandbox):
    cases = {"inputs": ["1\n", "2\n"], "outputs": ["1\n", "4\n"]}
    results, meta = prime_code.check_correctness(cases, "def broken(:\n", sandbox=sandbox)
    assert results == [-2, -2] and meta[0]["error_message"] == "Compilation Error"
    results, meta = prime_code.check_correctness(cases, "n = int(input())\nprint(1 // (n - 2) + n * n)",
                                                 sandbox=sandbox)
    assert results == [False, -1] and "ZeroDivisionError" in meta[1]["traceback"]
    results, meta = prime_code.check_correctness(cases, "import time\ntime.sleep(30)", timeout=1, sandbox=sandbox)
    assert results == [-1, -1] and meta[0]["error_message"] == "Time Limit Exceeded"
    # the APPS harness's star-imports and exit() as a normal end
    results, _ = prime_code.check_correctness(cases, "n = int(input())\nprint(int(pow(n, 2)))\nexit(1)",
                                              sandbox=sandbox)
    assert results == [True, True]


def test_function_call_problems(sandbox):
    fn = {"fn_name": "combine", "inputs": ["[1, 3]\n[2]", "[]\n[]", "{\"1\": 2}\n{\"3\": 4}"],
          "outputs": ["[1, 2, 3]", "[[]]", "{\"1\": 2, \"3\": 4}"]}
    code = ("def combine(a, b):\n    print('debug output is not the result')\n"
            "    return {**a, **b} if isinstance(a, dict) else sorted(a + b)")
    assert prime_code.compute_score(program(code), fn, sandbox=sandbox)[0] == 1.0
    solution = "class Solution:\n    def combine(self, a, b):\n        return tuple(a + b)"
    results, _ = prime_code.check_correctness(fn, solution, sandbox=sandbox)
    assert results[:2] == [False, True]  # (1, 3, 2) != [1, 2, 3]; () == [] == the first of [[]]
    results, meta = prime_code.check_correctness(fn, "def other(): pass", sandbox=sandbox)
    assert results == [-2, -2, -2] and meta[0]["error_message"] == "Compilation Error"


def test_output_comparison_rules():
    assert compare_stdout("  3\n4  \n", "3\n4")
    assert compare_stdout("3\n\n4\n", "3\n4\n")
    assert compare_stdout("0.3333333\n", "0.33333333333")
    assert not compare_stdout("0.33\n", "0.3333")
    assert not compare_stdout("100000000\n", "100000001")  # integers compare exactly ...
    assert compare_stdout("100000000\n", "100000001.0")  # ... other numbers to numpy.allclose's tolerance
    assert compare_stdout("1 2\n", ["1 2"]) and not compare_stdout("1 2 3\n", "1 2")
    assert compare_stdout("inf\n", "inf")  # equal as text
    assert not compare_stdout("", "1")
    assert compare_call_result([1, 2], [[1, 2]]) and compare_call_result([1, 2], [1, 2])
    assert compare_call_result({"1": 2}, {"1": 2}) and compare_call_result({1: 2}, {"1": 2})
    assert not compare_call_result([2, 1], [1, 2])


def test_default_compute_score_uses_the_local_sandbox_for_code():
    cases = json.dumps({"inputs": ["5\n", "6\n"], "outputs": ["25\n", "0\n"]})
    assert default_compute_score("apps", program("print(int(input()) ** 2)"), cases) == 0.5
    assert default_compute_score("codecontests", program("print(int(input()) ** 2)"), "not json") == 0.0


def test_trainer_config_sandbox_keys():
    assert sandbox_fusion_kwargs(verl.load_config()) == {}
    cfg = verl.load_config(overrides=["reward.sandbox_fusion.url=http://127.0.0.1:9/run_code",
                                      "reward.sandbox_fusion.max_concurrent=3",
                                      "reward.sandbox_fusion.memory_limit_mb=333"])
    kwargs = sandbox_fusion_kwargs(cfg)
    assert kwargs["sandbox_fusion_url"] == "http://127.0.0.1:9/run_code" and kwargs["memory_limit_mb"] == 333
    semaphore = kwargs["concurrent_semaphore"]
    assert all(semaphore.acquire(blocking=False) for _ in range(3)) and not semaphore.acquire(blocking=False)
    legacy = verl.load_config(overrides=["sandbox_fusion.url=https://sandbox.example/run_code"])
    assert sandbox_fusion_kwargs(legacy)["memory_limit_mb"] == 1024  # the rest from reward.sandbox_fusion
    for bad, match in [("reward.sandbox_fusion.url=ftp://x", "url"),
                       ("reward.sandbox_fusion.memory_limit_mb=0", "memory_limit_mb")]:
        with pytest.raises(verl.ConfigError, match=match):
            sandbox_fusion_kwargs(verl.load_config(overrides=["reward.sandbox_fusion.url=http://h/run_code", bad]))


def test_reward_manager_scores_code_through_the_configured_server(stub_server):
    cfg = verl.load_config(overrides=[f"reward.sandbox_fusion.url={stub_server.url}",
                                      "reward.sandbox_fusion.max_concurrent=1",
                                      "reward.sandbox_fusion.memory_limit_mb=333"])
    manager = load_reward_manager(cfg, tokenizer=None, num_examine=0)
    score = manager.reward_fn.score(0, response=program("print(int(input()) * 3)"), data_source="apps",
                                    ground_truth=json.dumps({"inputs": ["1\n", "2\n", "3\n"],
                                                             "outputs": ["3\n", "6\n", "0\n"]}))
    assert score == pytest.approx(2 / 3)
    assert len(stub_server.requests) == 3 and stub_server.max_in_flight == 1
    assert {b["memory_limit_MB"] for b in stub_server.requests} == {333}
    assert isinstance(sandbox_fusion_kwargs(cfg)["concurrent_semaphore"], type(threading.Semaphore()))
