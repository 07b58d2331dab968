"""One APPS / PRIME test case as a Sandbox Fusion request, and the PRIME harness's judgement of its response.

verl's ``prime_code.testing_util.run_test`` executes the generated code inside the scoring process (behind a
``reliability_guard`` that its own docstring says is no sandbox). Here the same harness runs as the program of a
``/run_code`` request, in ``LocalSandbox`` or on a Sandbox Fusion server: the generated code travels as the file
``solution.py``, the harness below loads it with the APPS star-imports and the raised recursion limit, and the
verdict is computed here from the response with the harness's comparison rules:

- **standard input** (no ``fn_name``): the program runs as ``__main__`` with the test's input on stdin
  (``SystemExit`` counts as a normal end, as in the harness); its stdout matches the expected output when, in
  this order, the stripped texts are equal, the line-stripped texts are equal, the non-empty stripped lines
  are equal, or every line is a number and they agree to ``numpy.allclose``'s tolerances.
- **function call** (``fn_name``): the module is loaded (not as ``__main__``), ``fn_name`` is taken from it (or
  from ``Solution()`` when the code defines ``class Solution``) and called with the input's JSON lines as
  arguments; the result, sent back as JSON (tuples become lists), equals the expected JSON value or its first
  element (APPS wraps single results in a list); dict keys that are integers in text compare as integers.

Verdicts: ``True`` passed, ``False`` wrong answer, ``-1`` runtime error, timeout or sandbox error, ``-2`` the
code did not load (syntax error, exception at import, ``fn_name`` missing).
"""

from __future__ import annotations

import base64
import json
import math
from typing import Any

__all__ = ["build_request", "judge", "compare_stdout", "compare_call_result", "LOAD_ERROR_EXIT", "HARNESS"]

#: the harness's exit status when the code does not load (-2); a runtime error exits with RUNTIME_ERROR_EXIT
LOAD_ERROR_EXIT = 3
RUNTIME_ERROR_EXIT = 4
SOLUTION_FILE = "solution.py"

_APPS_HEADER = "".join(f"from {m} import *\n" for m in (
    "string", "re", "datetime", "collections", "heapq", "bisect", "copy", "math", "random", "statistics",
    "itertools", "functools", "operator", "io", "sys", "json", "builtins", "typing")) + "".join(
    f"import {m}\n" for m in ("string", "re", "datetime", "collections", "heapq", "bisect", "copy", "math",
                              "random", "statistics", "itertools", "functools", "operator", "io", "sys", "json")
) + "sys.setrecursionlimit(6*10**5)\n"

HARNESS = '''import io, json, os, sys, traceback

_MODE = {mode!r}
_FN_NAME = {fn_name!r}
_HEADER = {header!r}


def _int_keys(value):
    try:
        return {{int(k): v for k, v in value.items()}}
    except (TypeError, ValueError):
        return value


def _main():
    with open({solution!r}, encoding="utf-8") as f:
        source = f.read()
    namespace = {{"__name__": "__main__" if _MODE == "stdin" else "tmp_sol", "__builtins__": __builtins__}}
    real_stdout = sys.stdout
    try:
        exec(compile(_HEADER, "<header>", "exec"), namespace)
        code = compile(source, "<string>", "exec")
    except BaseException:
        traceback.print_exc()
        return {load_error}
    if _MODE == "stdin":
        try:
            exec(code, namespace)
        except SystemExit:
            pass
        except BaseException:
            traceback.print_exc()
            return {runtime_error}
        return 0
    sys.stdout = io.StringIO()  # the function's own prints are not its result
    try:
        exec(code, namespace)
        owner = namespace["Solution"]() if "class Solution" in source else None
        method = getattr(owner, _FN_NAME) if owner is not None else namespace[_FN_NAME]
    except BaseException:
        sys.stdout = real_stdout
        traceback.print_exc()
        return {load_error}
    try:
        args = [json.loads(line) for line in sys.stdin.read().split("\\n")]
        if args and isinstance(args[0], dict):
            args[0] = _int_keys(args[0])
        result = method(*args)
    except BaseException:
        sys.stdout = real_stdout
        traceback.print_exc()
        return {runtime_error}
    sys.stdout = real_stdout
    try:
        text = json.dumps(result)
    except (TypeError, ValueError):
        text = json.dumps({{"__not_json__": repr(result)[:200]}})
    real_stdout.write("\\n" + text + "\\n")
    return 0


_status = _main()
sys.stdout.flush()
sys.stderr.flush()
os._exit(_status)
'''


def build_request(solution: str, in_outs: dict[str, Any], index: int, timeout: float,
                  memory_limit_mb: int) -> dict[str, Any]:
    """The ``/run_code`` request body running test case ``index`` of ``in_outs`` against ``solution``."""
    fn_name = in_outs.get("fn_name")
    test_input = in_outs["inputs"][index]
    if isinstance(test_input, list):
        test_input = "\n".join(str(x) for x in test_input)
    harness = HARNESS.format(mode="call" if fn_name else "stdin", fn_name=fn_name, header=_APPS_HEADER,
                             solution=SOLUTION_FILE, load_error=LOAD_ERROR_EXIT, runtime_error=RUNTIME_ERROR_EXIT)
    return {"code": harness, "language": "python", "stdin": str(test_input), "run_timeout": timeout,
            "compile_timeout": timeout, "memory_limit_MB": memory_limit_mb,
            "files": {SOLUTION_FILE: base64.b64encode(solution.encode("utf-8")).decode()}, "fetch_files": []}


def _truncate(text: str, length: int = 300) -> str:
    return text if len(text) <= length else text[:length // 2] + "...(truncated) ..." + text[-length // 2:]


def judge(response: dict[str, Any] | None, error: str | None, in_outs: dict[str, Any],
          index: int) -> tuple[Any, dict[str, Any]]:
    """``(verdict, metadata)`` for test case ``index`` from its ``/run_code`` response (or transport error)."""
    expected = in_outs["outputs"][index]
    meta: dict[str, Any] = {"inputs": _truncate(str(in_outs["inputs"][index])),
                            "expected": _truncate(str(expected), 200)}
    if error is not None or not isinstance(response, dict):
        return -1, {**meta, "error": error or "no response", "error_message": "Sandbox Error"}
    run = response.get("run_result") or {}
    if response.get("status") == "SandboxError" or not isinstance(run, dict) or not run:
        return -1, {**meta, "error": response.get("message") or "sandbox error", "error_message": "Sandbox Error"}
    stdout, stderr = run.get("stdout") or "", run.get("stderr") or ""
    if run.get("status") == "TimeLimitExceeded":
        return -1, {**meta, "error": "TimeoutError", "error_message": "Time Limit Exceeded"}
    if run.get("status") != "Finished":
        return -1, {**meta, "error": stderr[-2000:], "error_message": "Sandbox Error"}
    code = run.get("return_code")
    if code == LOAD_ERROR_EXIT:
        return -2, {**meta, "error": "Compilation Error", "traceback": stderr[-2000:],
                    "error_message": "Compilation Error"}
    if code != 0:
        return -1, {**meta, "error": f"exit status {code}", "traceback": stderr[-2000:],
                    "error_message": "Runtime Error"}
    if in_outs.get("fn_name"):
        lines = [line for line in stdout.splitlines() if line.strip()]
        try:
            output = json.loads(lines[-1]) if lines else None
            passed = bool(lines) and compare_call_result(output, json.loads(expected) if isinstance(expected, str)
                                                         else expected)
        except (TypeError, ValueError):
            passed = False
        shown = lines[-1] if lines else ""
    else:
        passed = compare_stdout(stdout, expected)
        shown = stdout
    if passed:
        return True, {**meta, "output": _truncate(shown, 200)}
    return False, {**meta, "output": _truncate(shown, 200), "error_message": "Wrong Answer"}


def _int_keys(value: Any) -> Any:
    try:
        return {int(k): v for k, v in value.items()}
    except (TypeError, ValueError, AttributeError):
        return value


def compare_call_result(output: Any, expected: Any) -> bool:
    """A function's JSON result against the expected JSON value (see the module docstring)."""
    if isinstance(expected, dict):
        return _int_keys(output) == _int_keys(expected)
    if output == expected:
        return True
    return isinstance(expected, list) and len(expected) > 0 and output == expected[0]


def _allclose(a: list[float], b: list[float]) -> bool:
    # numpy.allclose's test, |a - b| <= atol + rtol * |b|, with its defaults
    return len(a) == len(b) and all(abs(x - y) <= 1e-8 + 1e-5 * abs(y) for x, y in zip(a, b))


def _is_int_text(value: str) -> bool:
    return value.isdigit()


def compare_stdout(actual: str, expected: Any) -> bool:
    """A program's stdout against the expected output (a string, or a list of lines) with the APPS harness's
    tolerances (see the module docstring)."""
    if isinstance(expected, list):
        expected = "\n".join(str(x) for x in expected)
    expected = str(expected)
    lines = actual.splitlines()
    if "\n".join(lines).strip() == expected.strip():
        return True
    if "\n".join(line.strip() for line in lines).strip() == expected.strip():
        return True
    expected_lines = [x.strip() for x in expected.split("\n") if x]
    actual_lines = [x for x in lines if x]
    if lines == expected_lines or actual_lines == expected_lines:
        return True
    if len(actual_lines) == len(expected_lines) and actual_lines and \
            not all(_is_int_text(a) and _is_int_text(e) for a, e in zip(actual_lines, expected_lines)):
        try:
            actual_f = [float(x) for x in actual_lines]
            expected_f = [float(x) for x in expected_lines]
        except ValueError:
            return False
        if all(math.isfinite(x) for x in actual_f + expected_f):
            return _allclose(actual_f, expected_f)
    return False
