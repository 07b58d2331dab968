"""``check_correctness``: every test case of a problem run in a sandbox, one sandbox run per case.

verl's version forks the scoring process and runs the harness inside it; here each case is one ``/run_code``
request (``testing_util.build_request``) on ``sandbox``: a ``LocalSandbox`` (the default, one shared instance),
any object with ``run_code(request) -> response``, or the URL of a Sandbox Fusion server. Cases run concurrently
(the local sandbox bounds how many programs run at once).
"""

from __future__ import annotations

import concurrent.futures
import threading
from typing import Any

from ..sandbox_fusion.local_sandbox import LocalSandbox
from ..sandbox_fusion.utils import run_code
from .testing_util import build_request, judge

__all__ = ["check_correctness", "default_sandbox"]

_default_sandbox: LocalSandbox | None = None
_default_lock = threading.Lock()


def default_sandbox() -> LocalSandbox:
    """The process-wide ``LocalSandbox`` (default limits), checked once to work here
    (``SandboxUnavailableError`` otherwise)."""
    global _default_sandbox
    with _default_lock:
        if _default_sandbox is None:
            _default_sandbox = LocalSandbox()
    _default_sandbox.ensure_available()
    return _default_sandbox


def check_correctness(in_outs: dict[str, Any], generation: str, timeout: float = 10, sandbox: Any = None,
                      memory_limit_mb: int = 1024, max_cases: int | None = None
                      ) -> tuple[list[Any], list[dict[str, Any]]]:
    """``(verdicts, metadata)`` for the first ``max_cases`` (all when None) test cases, in order; see
    ``testing_util`` for the verdicts. Never raises for a failing program."""
    sandbox = sandbox if sandbox is not None else default_sandbox()
    n = len(in_outs["inputs"]) if max_cases is None else min(max_cases, len(in_outs["inputs"]))
    if n == 0:
        return [], []

    def one(i: int) -> tuple[Any, dict[str, Any]]:
        response, error = run_code(sandbox, build_request(generation, in_outs, i, timeout, memory_limit_mb))
        return judge(response, error, in_outs, i)

    with concurrent.futures.ThreadPoolExecutor(max_workers=n) as pool:
        outcomes = list(pool.map(one, range(n)))
    return [verdict for verdict, _ in outcomes], [meta for _, meta in outcomes]
