"""Code rewards from test cases, verl's ``verl.utils.reward_score.prime_code`` (the PRIME / APPS harness), with
every test run in a sandbox (``LocalSandbox`` by default, or a Sandbox Fusion server) instead of the scoring
process.

``compute_score(completion, test_cases, continuous=False, sandbox=None, timeout=10)`` returns
``(score, metadata_list)``. The code is what follows the last ```` ```python ```` fence of the completion (the
whole completion when there is none). ``test_cases`` (a dict or its JSON text) holds ``inputs`` and
``outputs`` and, for function-call problems, ``fn_name`` (see ``testing_util``). Not ``continuous``: 1.0 when
every case passes, else 0.0. ``continuous``: the fraction passed of the first 10 cases (verl's "per sample test"
cut; 1.0 whenever all cases pass). Malformed test cases score 0.0 with an ``error`` entry. With the default
local sandbox, a machine where it cannot isolate programs raises ``SandboxUnavailableError`` instead of scoring
every sample 0.
"""

from __future__ import annotations

import json
from typing import Any

from .utils import check_correctness, default_sandbox

__all__ = ["compute_score", "check_correctness", "default_sandbox", "CONTINUOUS_CASES"]

#: ``continuous`` scores count this many leading test cases
CONTINUOUS_CASES = 10


def compute_score(completion: str, test_cases: Any, continuous: bool = False, sandbox: Any = None,
                  timeout: float = 10, memory_limit_mb: int = 1024) -> tuple[float, list[dict[str, Any]]]:
    solution = completion.split("```python")[-1].split("```")[0]
    if not isinstance(test_cases, dict):
        try:
            test_cases = json.loads(test_cases)
        except (TypeError, ValueError) as e:
            return 0.0, [{"error": f"Invalid test_cases JSON format: {e}"}]
    inputs, outputs = (test_cases.get("inputs"), test_cases.get("outputs")) if isinstance(test_cases, dict) \
        else (None, None)
    if not isinstance(inputs, list) or not isinstance(outputs, list) or len(inputs) != len(outputs) or not inputs:
        return 0.0, [{"error": "Invalid test_cases structure (needs equally long, non-empty inputs and outputs)"}]
    results, metadata = check_correctness(test_cases, solution, timeout=timeout, sandbox=sandbox,
                                          memory_limit_mb=memory_limit_mb,
                                          max_cases=CONTINUOUS_CASES if continuous else None)
    for i, meta in enumerate(metadata):
        meta["test_case"] = {"input": str(inputs[i]), "output": str(outputs[i]), "res": str(results[i])}
    passed = sum(1 for r in results if r is True)
    score = passed / len(results) if continuous else float(passed == len(results))
    return float(score), metadata
