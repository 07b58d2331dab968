"""Code rewards through Sandbox Fusion (https://github.com/bytedance/SandboxFusion), verl's
``verl.utils.reward_score.sandbox_fusion``.

``compute_score(sandbox_fusion_url, concurrent_semaphore, memory_limit_mb, completion, test_cases,
continuous=False, timeout=10)`` takes the code from the completion's last fenced block, runs every test case on
the sandbox (``utils.check_correctness``) and returns ``(score, metadata_list)``: the fraction of cases passed (of
the first 10 when ``continuous``), 0.0 with an ``error`` entry when the completion has no code block or the test
cases are malformed. ``sandbox_fusion_url`` is a server's ``/run_code`` URL or a ``LocalSandbox`` (this package's
built-in, namespace-isolated backend with the same request / response bodies).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from .local_sandbox import LocalSandbox, SandboxUnavailableError
from .utils import check_correctness

__all__ = ["compute_score", "extract_code", "LocalSandbox", "SandboxUnavailableError", "check_correctness"]

logger = logging.getLogger(__name__)

#: ``continuous`` scores count this many leading test cases
CONTINUOUS_CASES = 10


def extract_code(completion: str) -> str | None:
    """The code of a completion as verl's sandbox scorer finds it: after the last ```` ```python ```` up to the
    next fence; else the first fenced block, without a language line; None when there is no fence at all."""
    if "```python" in completion:
        return completion.split("```python")[-1].split("```")[0]
    if "```" in completion:
        parts = completion.split("```")
        solution = parts[1]
        if "\n" in solution:
            first_line, rest = solution.split("\n", 1)
            if first_line.strip().isalpha():
                solution = rest
        return solution
    return None


def compute_score(sandbox_fusion_url: Any, concurrent_semaphore: Any, memory_limit_mb: int, completion: str,
                  test_cases: Any, continuous: bool = False, timeout: float = 10) -> tuple[float, list]:
    """``(score in [0, 1], per-case metadata)``; never raises for a bad program, server or test-case string."""
    solution = extract_code(completion)
    if solution is None:
        return 0.0, [{"error": "Invalid completion (missing code block)"}]
    try:
        if not isinstance(test_cases, dict):
            try:
                test_cases = json.loads(test_cases)
            except (TypeError, ValueError) as e:
                logger.error("Failed to parse test_cases JSON: %s", e)
                return 0.0, [{"error": "Invalid test_cases JSON format"}]
        if isinstance(test_cases, dict) and isinstance(test_cases.get("assert_case"), list):
            n = len(test_cases["assert_case"])
            test_cases = {"inputs": [""] * n, "outputs": [None] * n, **test_cases}
        elif not isinstance(test_cases, dict) or "inputs" not in test_cases or "outputs" not in test_cases:
            return 0.0, [{"error": "Invalid test_cases structure (missing inputs/outputs)"}]

        results, metadata = check_correctness(sandbox_fusion_url=sandbox_fusion_url, in_outs=test_cases,
                                              generation=solution, timeout=timeout,
                                              concurrent_semaphore=concurrent_semaphore,
                                              memory_limit_mb=memory_limit_mb)
        if not results:
            return 0.0, metadata
        considered = results[:CONTINUOUS_CASES] if continuous else results
        score = sum(1 for r in considered if r is True) / len(considered)
    except Exception as e:  # noqa: BLE001 -- verl scores 0 and records the error rather than stopping training
        logger.error("Error during compute_score: %s: %s", type(e).__name__, e)
        return 0.0, [{"error": f"Unhandled exception: {e}"}]
    return float(score), metadata if isinstance(metadata, list) else [metadata]
