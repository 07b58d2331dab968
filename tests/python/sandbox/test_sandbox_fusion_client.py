"""The Sandbox Fusion client against a stub server on loopback speaking POST /run_code: the same scores as the
local backend, verl's request body, the concurrency bound, and every server failure recorded per case."""

from __future__ import annotations

import json
import socket
import threading

import pytest

from verl.utils.reward_score import default_compute_score, sandbox_fusion
from verl.utils.reward_score.sandbox_fusion import utils as sf_utils

ADD = {"inputs": ["1 2\n", "3 4\n", "10 20\n"], "outputs": ["3\n", "7\n", "30\n"]}
CORRECT = "```python\na, b = map(int, input().split())\nprint(a + b)\n```"
PARTIAL = "```python\na, b = map(int, input().split())\nprint(a + b if a < 5 else 0)\n```"
WRONG = "```python\nprint(0)\n```"
# verl's sandbox_fusion.utils.call_sandbox_api body
VERL_BODY_KEYS = {"compile_timeout", "run_timeout", "code", "stdin", "memory_limit_MB", "language", "files",
                  "fetch_files"}


@pytest.mark.parametrize("completion, expected", [(CORRECT, 1.0), (PARTIAL, 2 / 3), (WRONG, 0.0)])
def test_server_and_local_backend_give_the_same_scores(stub_server, sandbox, completion, expected):
    remote, remote_meta = sandbox_fusion.compute_score(stub_server.url, None, 512, completion, json.dumps(ADD))
    local, local_meta = sandbox_fusion.compute_score(sandbox, None, 512, completion, ADD)
    assert remote == pytest.approx(expected) and local == pytest.approx(expected)
    assert [m["status"] for m in remote_meta] == [m["status"] for m in local_meta]
    assert len(stub_server.requests) == 3
    for body, stdin in zip(sorted(stub_server.requests, key=lambda b: b["stdin"]), sorted(ADD["inputs"])):
        assert set(body) == VERL_BODY_KEYS and body["stdin"] == stdin
        assert body["language"] == "python" and body["memory_limit_MB"] == 512
        assert body["run_timeout"] == 10 and body["compile_timeout"] == 10 and body["files"] == {}


def test_function_call_and_assert_cases(stub_server):
    fn = {"fn_name": "add", "inputs": ["1\n2", "[1]\n[2, 3]"], "outputs": ["3", "[1, 2, 3]"]}
    code = "```python\nclass Solution:\n    def add(self, a, b):\n        return a + b\n```"
    assert sandbox_fusion.compute_score(stub_server.url, None, 512, code, fn)[0] == 1.0
    asserts = {"assert_case": ["assert f(2) == 4", "assert f(3) == 9", "assert f(0) == 1"]}
    score, meta = sandbox_fusion.compute_score(stub_server.url, None, 512, "```python\ndef f(x): return x * x\n```",
                                               asserts)
    assert score == pytest.approx(2 / 3) and [m["status"] for m in meta] == ["success", "success", "runtime_error"]


def test_concurrency_is_bounded_by_the_semaphore(stub_server):
    stub_server.delay = 0.15
    cases = {"inputs": [f"{i} 1\n" for i in range(8)], "outputs": [f"{i + 1}\n" for i in range(8)]}
    score, _ = sandbox_fusion.compute_score(stub_server.url, threading.Semaphore(2), 256, CORRECT, cases)
    assert score == 1.0 and stub_server.max_in_flight == 2


def test_gateway_timeouts_are_retried(stub_server, monkeypatch):
    monkeypatch.setattr(sf_utils, "INITIAL_RETRY_DELAY", 0.01)
    stub_server.fail_first = 2  # two 504s, then the real answer
    one = {"inputs": ["2 2\n"], "outputs": ["4\n"]}
    assert sandbox_fusion.compute_score(stub_server.url, None, 256, CORRECT, one)[0] == 1.0
    assert len(stub_server.requests) == 3
    stub_server.requests.clear()
    stub_server.fail_first = 10
    score, meta = sandbox_fusion.compute_score(stub_server.url, None, 256, CORRECT, one)
    assert score == 0.0 and meta[0]["status"] == "api_error" and "504" in meta[0]["api_request_error"]
    assert len(stub_server.requests) == sf_utils.MAX_RETRIES


@pytest.mark.parametrize("mode, message", [("status:500", "HTTP 500"), ("status:422", "HTTP 422"),
                                           ("garbage", "JSON Decode"), ("list", "expected a JSON object")])
def test_server_failures_are_recorded_per_case(stub_server, mode, message):
    stub_server.mode = mode
    score, meta = sandbox_fusion.compute_score(stub_server.url, None, 256, CORRECT, ADD)
    assert score == 0.0 and len(meta) == 3
    assert all(m["status"] == "api_error" and message in m["api_request_error"] for m in meta), meta


def test_request_timeout_and_refused_connection(stub_server, monkeypatch):
    monkeypatch.setattr(sf_utils, "API_TIMEOUT", 0.3)
    stub_server.mode = "sleep:3"
    one = {"inputs": ["2 2\n"], "outputs": ["4\n"]}
    score, meta = sandbox_fusion.compute_score(stub_server.url, None, 256, CORRECT, one, timeout=0.2)
    assert score == 0.0 and meta[0]["status"] == "api_error" and "timed out" in meta[0]["api_request_error"]

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    score, meta = sandbox_fusion.compute_score(f"http://127.0.0.1:{port}/run_code", None, 256, CORRECT, one)
    assert score == 0.0 and meta[0]["status"] == "api_error" and "refused" in meta[0]["api_request_error"]


def test_sandbox_verdicts_from_responses(monkeypatch):
    """verl's reading of Sandbox Fusion's statuses, one response per case (a compile error fails later cases)."""
    def run(status, rc=0, stdout="", run_status="Finished"):
        return {"status": status, "message": "", "compile_result": None,
                "run_result": {"status": run_status, "return_code": rc, "stdout": stdout, "stderr": ""}}

    by_stdin = {
        "a": {"status": "SandboxError", "message": "pod died", "compile_result": None, "run_result": None},
        "b": run("Failed", None, run_status="TimeLimitExceeded"),
        "c": run("Failed", 1),
        "d": run("Success", 0, "5\n"),
        "e": run("Success", 0, "4\n\n"),
        "f": {"status": "Failed", "message": "", "run_result": None,
              "compile_result": {"status": "Finished", "return_code": 1, "stderr": "error: x"}},
        "g": run("Success", 0, "4\n"),
    }
    monkeypatch.setattr(sf_utils, "run_code", lambda url, body: (by_stdin[body["stdin"]], None))
    results, meta = sf_utils.check_correctness("http://unused", {"inputs": list("abcdefg"), "outputs": ["4"] * 7},
                                               "code", timeout=1)
    assert results == [-1, -3, -2, False, True, -4, -4]
    assert [m["status"] for m in meta] == ["sandbox_error", "timeout", "runtime_error", "wrong_answer", "success",
                                           "compile_error", "compile_error_skipped"]


def test_default_compute_score_routes_code_sources_to_the_server(stub_server):
    assert default_compute_score("codeforces", PARTIAL, json.dumps(ADD), sandbox_fusion_url=stub_server.url,
                                 concurrent_semaphore=threading.Semaphore(1), memory_limit_mb=300) == \
        pytest.approx(2 / 3)
    assert {b["memory_limit_MB"] for b in stub_server.requests} == {300} and stub_server.max_in_flight == 1
    # no code block: verl's sandbox scorer gives 0 without calling the server
    assert default_compute_score("taco", "print(3)", ADD, sandbox_fusion_url=stub_server.url) == 0.0
    assert len(stub_server.requests) == 3
