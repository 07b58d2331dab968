"""Test cases through Sandbox Fusion's ``/run_code``: verl's ``sandbox_fusion.utils``, on either backend.

``check_correctness(sandbox_fusion_url, in_outs, generation, timeout, memory_limit_mb, language,
concurrent_semaphore)`` runs one request per test case (concurrently, at most as many at once as the semaphore
allows) and returns ``(results, metadata_list)`` in test order: ``True`` passed, ``False`` wrong answer, ``-1``
API / sandbox error, ``-2`` runtime error, ``-3`` timeout, ``-4`` compile error (later cases then count as
compile errors too), with one metadata dict per case (``status``, ``stdout``, ``stderr``, ``exit_code``,
``api_request_error``, ...) as verl records them.

``sandbox_fusion_url`` is the URL of a Sandbox Fusion ``/run_code`` endpoint (``https://host/run_code``), or a
backend object with ``run_code(request) -> response`` such as ``LocalSandbox``: both speak the same request and
response bodies. The HTTP client is the standard library's (``urllib``): a 504 is retried
``MAX_RETRIES`` times with a growing delay, any other failure (connection refused, timeout, HTTP error, a body
that is not a JSON object) is recorded as that case's ``api_request_error``. Nothing here raises for a failing
program or server.

Test cases (``in_outs``): ``{"inputs": [...], "outputs": [...]}`` with stdin strings and expected stdout strings;
with ``"fn_name"`` each input is the function's arguments as JSON, one per line, and the program is wrapped to
call ``fn_name`` (or ``Solution().fn_name``) and print the result; with ``"assert_case": [...]`` each case's code
is appended to the program (and outputs may be None: passing means exiting 0).
"""

from __future__ import annotations

import contextlib
import concurrent.futures
import json
import logging
import os
import threading
import time
import urllib.error
import urllib.request
import uuid
from typing import Any

__all__ = ["call_sandbox_api", "run_code", "check_correctness", "SUPPORTED_LANGUAGES", "DEFAULT_TIMEOUT", "MAX_RETRIES",
           "API_TIMEOUT", "build_function_call_program"]

DEFAULT_TIMEOUT = 10  # compile and run timeout per test case, seconds
MAX_RETRIES = 3
INITIAL_RETRY_DELAY = 1  # seconds; the n-th retry after a 504 waits n times this
API_TIMEOUT = 10  # seconds of HTTP time on top of the compile and run timeouts

logger = logging.getLogger(__name__)

#: Sandbox Fusion's ``Language`` values
SUPPORTED_LANGUAGES = [
    "python", "cpp", "nodejs", "go", "go_test", "java", "php", "csharp", "bash", "typescript", "sql", "rust", "cuda",
    "lua", "R", "perl", "D_ut", "ruby", "scala", "julia", "pytest", "junit", "kotlin_script", "jest", "verilog",
    "python_gpu", "lean", "swift", "racket",
]


def _post_json(url: str, payload: bytes, timeout: float) -> Any:
    request = urllib.request.Request(url, data=payload, method="POST",
                                     headers={"Content-Type": "application/json", "Accept": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read().decode("utf-8"))


def call_sandbox_api(sandbox_fusion_url: Any, code: str, stdin: str | None, compile_timeout: float,
                     run_timeout: float, memory_limit_mb: int, language: str = "python"
                     ) -> tuple[dict[str, Any] | None, str | None]:
    """One ``/run_code`` request built from its fields: ``(response, None)`` or ``(None, error message)``; never
    raises."""
    if language not in SUPPORTED_LANGUAGES:
        return None, f"Unsupported language: {language}"
    return run_code(sandbox_fusion_url, {
        "compile_timeout": compile_timeout, "run_timeout": run_timeout, "code": code, "stdin": stdin,
        "memory_limit_MB": memory_limit_mb, "language": language, "files": {}, "fetch_files": []})


def run_code(sandbox_fusion_url: Any, body: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    """A ``/run_code`` request body sent to a server URL (504 retried) or handed to a backend object:
    ``(response, None)`` or ``(None, error message)``; never raises."""
    if not isinstance(sandbox_fusion_url, str):  # a local backend speaking the same bodies
        try:
            response = sandbox_fusion_url.run_code(body)
        except Exception as e:  # noqa: BLE001 -- a backend failure is this case's error, never the trainer's
            return None, f"Sandbox backend error: {type(e).__name__}: {e}"
        if not isinstance(response, dict):
            return None, f"Sandbox backend returned {type(response).__name__}, expected a dict"
        return response, None

    request_id = uuid.uuid4().hex[:8]
    payload = json.dumps(body).encode("utf-8")
    timeout = float(body.get("compile_timeout", DEFAULT_TIMEOUT)) + float(body.get("run_timeout", DEFAULT_TIMEOUT)) \
        + API_TIMEOUT
    last_error = None
    for attempt in range(MAX_RETRIES):
        try:
            response = _post_json(sandbox_fusion_url, payload, timeout)
        except urllib.error.HTTPError as e:
            if e.code == 504:
                last_error = f"API Request Error: Gateway Timeout (504) on attempt {attempt + 1}/{MAX_RETRIES}"
                logger.warning("[sandbox %s] %s", request_id, last_error)
                if attempt < MAX_RETRIES - 1:
                    time.sleep(INITIAL_RETRY_DELAY * (attempt + 1))
                continue
            last_error = f"API Request Error: HTTP {e.code} {e.reason}"
            break
        except (urllib.error.URLError, TimeoutError, OSError) as e:
            last_error = f"API Request Error: {getattr(e, 'reason', e)}"
            break
        except (ValueError, UnicodeDecodeError) as e:
            last_error = f"API Response JSON Decode Error: {e}"
            break
        if not isinstance(response, dict):
            last_error = f"API Response Error: expected a JSON object, got {type(response).__name__}"
            break
        return response, None
    logger.error("[sandbox %s] call to %s failed: %s", request_id, sandbox_fusion_url, last_error)
    return None, f"API Call Failed: {last_error}" if last_error else "API Call Failed after retries"


# verl's wrapper for function-call tests: the same star-imports as the APPS harness, then a driver reading the
# arguments as JSON lines from stdin and printing the result (JSON for containers / None / bools, str otherwise).
_STAR_IMPORTS = ("string", "re", "datetime", "collections", "heapq", "bisect", "copy", "math", "random",
                 "statistics", "itertools", "functools", "operator", "io", "sys", "json")
_FUNCTION_CALL_DRIVER = '''
_SANDBOX_FN_NAME = {fn_name!r}


def _execute_user_function():
    _raw_input_str = sys.stdin.read()
    _args = []
    if _raw_input_str.strip():
        try:
            _args = [json.loads(line) for line in _raw_input_str.split("\\n")]
        except json.JSONDecodeError as _je:
            sys.stderr.write(f"WrapperError: Invalid JSON input for '{{_SANDBOX_FN_NAME}}': {{_je}}\\n"
                             f"Input was: {{_raw_input_str[:200]}}\\n")
            return None, True
    try:
        _target_callable = None
        if _SANDBOX_FN_NAME in globals():
            _target_callable = globals()[_SANDBOX_FN_NAME]
        elif "Solution" in globals():
            _target_callable = getattr(globals()["Solution"](), _SANDBOX_FN_NAME)
        if not _target_callable:
            sys.stderr.write(f"WrapperError: Function or method '{{_SANDBOX_FN_NAME}}' not found.\\n")
            return None, True
        return _target_callable(*_args), False
    except Exception:
        sys.stderr.write(f"Error during setup or execution of '{{_SANDBOX_FN_NAME}}':\\n"
                         f"{{traceback.format_exc()}}\\n")
        return None, True


if __name__ == "__main__":
    _result, _error_occurred = _execute_user_function()
    if not _error_occurred:
        if isinstance(_result, (dict, list, tuple)) or _result is None or isinstance(_result, bool):
            print(json.dumps(_result))
        else:
            print(str(_result))
'''


def build_function_call_program(generation: str, fn_name: str) -> str:
    """The program verl runs for a function-call test: imports, the generated code, a JSON-lines driver."""
    header = "import traceback\n" + "".join(f"from {m} import *\n" for m in _STAR_IMPORTS) + \
        "from builtins import *\nfrom typing import *\n" + "".join(f"import {m}\n" for m in _STAR_IMPORTS)
    return (header + "\n# === User's Original Code START ===\n" + generation +
            "\n# === User's Original Code END ===\n" + _FUNCTION_CALL_DRIVER.format(fn_name=fn_name))


def _classify(api_response: dict[str, Any], expected_output: Any, metadata: dict[str, Any]) -> Any:
    """verl's reading of a response: True / False / -1 / -2 / -3 / -4, with ``metadata['status']`` set."""
    compile_result = api_response.get("compile_result") or None
    run_result = api_response.get("run_result") or None
    metadata["api_response"] = api_response
    metadata["api_status"] = api_status = api_response.get("status")
    if isinstance(compile_result, dict):
        metadata["compile_status"] = compile_result.get("status")
        metadata["compile_duration"] = compile_result.get("execution_time")
        metadata["compile_stderr"] = compile_result.get("stderr")
    if isinstance(run_result, dict):
        metadata["run_status"] = run_result.get("status")
        metadata["stdout"] = run_result.get("stdout")
        metadata["stderr"] = run_result.get("stderr")
        metadata["exit_code"] = run_result.get("return_code")
        metadata["duration"] = run_result.get("execution_time")

    if api_status == "SandboxError":
        metadata["status"] = "sandbox_error"
        return -1
    if api_status == "Failed":
        if isinstance(compile_result, dict) and (
                metadata["compile_status"] in ("Error", "TimeLimitExceeded")
                or (metadata["compile_status"] == "Finished" and compile_result.get("return_code") != 0)):
            metadata["status"] = "compile_timeout" if metadata["compile_status"] == "TimeLimitExceeded" \
                else "compile_error"
            return -4
        if isinstance(run_result, dict):
            run_status = metadata["run_status"]
            if run_status == "TimeLimitExceeded":
                metadata["status"] = "timeout"
                return -3
            if run_status == "Error" or (run_status == "Finished" and run_result.get("return_code") != 0):
                metadata["status"] = "runtime_error"
                return -2
            metadata["status"] = "unknown_failure"
            return -1
        metadata["status"] = "unknown_failure_state"
        return -1
    if api_status == "Success":
        if isinstance(run_result, dict) and metadata["run_status"] == "Finished":
            actual = metadata["stdout"] if metadata["stdout"] is not None else ""
            if expected_output is None or str(actual).rstrip("\n") == str(expected_output).rstrip("\n"):
                metadata["status"] = "success"
                return True
            metadata["status"] = "wrong_answer"
            return False
        metadata["status"] = "unexpected_success_state"
        return -1
    metadata["status"] = f"unknown_api_status_{api_status}"
    return -1


def _process_single_case(case_index: int, stdin_data: Any, expected_output: Any, sandbox_fusion_url: Any,
                         generation: str, timeout: float, memory_limit_mb: int, language: str,
                         concurrent_semaphore: Any = None, fn_name: str | None = None) -> tuple[Any, dict[str, Any]]:
    """One test case: build the program, call the sandbox (holding the semaphore), classify the response."""
    code = build_function_call_program(generation, fn_name) if fn_name and language == "python" else generation
    stdin = None if stdin_data is None else str(stdin_data)
    # By keyword, as verl calls it: code that patches or wraps call_sandbox_api (verl's tests' mock side effects
    # read kwargs["stdin"]) sees the same call; an exception from it is this case's API error, as in verl.
    request = {"sandbox_fusion_url": sandbox_fusion_url, "code": code, "stdin": stdin, "compile_timeout": timeout,
               "run_timeout": timeout, "memory_limit_mb": memory_limit_mb, "language": language}
    api_response, error_msg = None, None
    try:
        with concurrent_semaphore if concurrent_semaphore is not None else contextlib.nullcontext():
            api_response, error_msg = call_sandbox_api(**request)
    except Exception as e:  # noqa: BLE001 -- one case's failure, reported in its metadata
        error_msg = f"API Request Exception during check_correctness for case {case_index + 1}: {e}"
        logger.error("Case %d: %s", case_index + 1, error_msg)
    metadata: dict[str, Any] = {
        "case_index": case_index, "input": stdin,
        "expected_output": str(expected_output) if expected_output else None,
        "api_request_error": error_msg, "api_response": None, "status": "unknown", "stdout": None, "stderr": None,
        "exit_code": None, "duration": None, "compile_duration": None, "compile_stderr": None, "api_status": None,
        "compile_status": None, "run_status": None,
    }
    if error_msg:
        metadata["status"] = "api_error"
        return -1, metadata
    return _classify(api_response, expected_output, metadata), metadata


def check_correctness(sandbox_fusion_url: Any, in_outs: dict | None, generation: str,
                      timeout: float = DEFAULT_TIMEOUT, memory_limit_mb: int = 1024, language: str = "python",
                      concurrent_semaphore: Any = None) -> tuple[list[Any], list[dict[str, Any]]]:
    """Every test case of ``in_outs`` against ``generation`` (see the module docstring)."""
    if not in_outs or not isinstance(in_outs, dict) or "inputs" not in in_outs or "outputs" not in in_outs:
        return [-1], [{"error": "Invalid input/output data"}]
    inputs, expected_outputs = in_outs["inputs"], in_outs["outputs"]
    fn_name = in_outs.get("fn_name")
    num_cases = len(inputs)
    if num_cases == 0:
        return [], []
    assert_cases = in_outs.get("assert_case") or [""] * num_cases
    if len(expected_outputs) != num_cases or len(assert_cases) != num_cases:
        return [-1] * num_cases, [{"error": "Input/output count mismatch", "case_index": i} for i in range(num_cases)]

    results: list[Any] = [None] * num_cases
    metadata_list: list[Any] = [None] * num_cases
    workers = max(32, (os.cpu_count() or 1) * 5)  # the semaphore, not the pool, bounds the sandbox's load
    with concurrent.futures.ThreadPoolExecutor(max_workers=min(workers, num_cases)) as executor:
        futures = {executor.submit(_process_single_case, i, inputs[i], expected_outputs[i], sandbox_fusion_url,
                                   generation + "\n\n" + str(assert_cases[i] or ""), timeout, memory_limit_mb,
                                   language, concurrent_semaphore, fn_name): i for i in range(num_cases)}
        for future in concurrent.futures.as_completed(futures):
            i = futures[future]
            try:
                results[i], metadata_list[i] = future.result()
            except Exception as e:  # noqa: BLE001 -- recorded for the case, as verl does
                logger.error("test case %d raised %s: %s", i, type(e).__name__, e)
                results[i] = -1
                metadata_list[i] = {"case_index": i, "input": str(inputs[i]),
                                    "expected_output": str(expected_outputs[i]) if expected_outputs[i] else None,
                                    "api_request_error": f"Internal execution error: {e}",
                                    "status": "internal_error"}

    first_compile_error = next((i for i, r in enumerate(results) if r == -4), None)
    if first_compile_error is not None:  # a program that does not compile fails every later case the same way
        for i in range(first_compile_error + 1, num_cases):
            if results[i] != -4:
                results[i] = -4
                metadata_list[i]["status"] = "compile_error_skipped"
    return results, metadata_list
