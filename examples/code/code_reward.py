"""The example's reward: the fraction of a program's hidden test cases it passes, run by verl's code scorer in
verl's local sandbox.

``SandboxReward`` is a batched reward function in verl's form (``f(data_sources, solution_strs, ground_truths,
extra_infos)``, verl's ``BatchRewardManager``). Each response is scored by ``prime_code.compute_score(...,
continuous=True)`` -- what verl's ``default_compute_score`` does for its code data sets (apps, codecontests,
...): every test case is one ``/run_code`` request to a ``LocalSandbox`` (a fresh namespace-isolated process
tree, no network, read-only file system) and the score is the fraction passed. The entries are ``score`` and
``acc`` (1.0 when every case passes: verl's val-core/code_synth/acc metric is the held-out pass rate).

Identical (response, test cases) pairs are run once: a group of GRPO samples often holds the same program
several times, and its verdict is a pure function of the program and the tests (these programs read no clock
and draw no random numbers; the sandbox gives them nothing else to depend on). The counters say how many
sandbox runs were made and how long scoring took, so the report can give runs per second.
"""

from __future__ import annotations

import concurrent.futures
import json
import threading
import time
from typing import Any

from verl.utils.reward_score import prime_code
from verl.utils.reward_score.sandbox_fusion import LocalSandbox


def _tests_key(tests: Any) -> str:
    """Test cases as the cache's key: the JSON text as given (verl's data sets store it so), a dict as JSON."""
    return tests if isinstance(tests, str) else json.dumps(tests, sort_keys=True)


class SandboxReward:
    """Scores responses by running their test cases in ``sandbox`` (a ``LocalSandbox`` by default, checked to
    work here at construction: a machine without user namespaces fails now, naming the cause, rather than
    scoring every sample 0)."""

    def __init__(self, sandbox: Any = None, timeout: float = 5.0, memory_limit_mb: int = 512,
                 max_programs: int = 4) -> None:
        if sandbox is None:
            sandbox = LocalSandbox(memory_limit_mb=memory_limit_mb, max_output_bytes=64 * 1024)
            sandbox.ensure_available()
        self.sandbox = sandbox
        self.timeout = timeout
        self.memory_limit_mb = memory_limit_mb
        # programs scored at once; the sandbox itself bounds how many processes run (its max_parallel)
        self.max_programs = max_programs
        self._cache: dict[tuple[str, str], float] = {}
        self._lock = threading.Lock()
        self.samples = 0  # responses scored
        self.programs = 0  # distinct (response, tests) pairs run in the sandbox
        self.sandbox_runs = 0  # test-case runs (one sandbox process tree each)
        self.seconds = 0.0  # wall time spent running them

    def score(self, response: str, tests: Any) -> float:
        """The fraction of ``tests`` (verl's test-case dict or its JSON text) that ``response`` passes, as verl's
        prime_code scorer computes it (of the first 10 cases; 0.0 for malformed test cases)."""
        key = (response, _tests_key(tests))
        with self._lock:
            if key in self._cache:
                return self._cache[key]
        score, metadata = prime_code.compute_score(response, tests, continuous=True, sandbox=self.sandbox,
                                                   timeout=self.timeout, memory_limit_mb=self.memory_limit_mb)
        with self._lock:
            self._cache[key] = score
            self.programs += 1
            self.sandbox_runs += sum(1 for m in metadata if "test_case" in m)  # malformed tests run nothing
        return score

    def __call__(self, data_sources: list, solution_strs: list[str], ground_truths: list, extra_infos: list
                 ) -> list[dict[str, float]]:
        start = time.perf_counter()
        keys = [(r, _tests_key(g)) for r, g in zip(solution_strs, ground_truths)]
        distinct = list(dict.fromkeys(keys))  # each distinct program once, even within a batch
        with concurrent.futures.ThreadPoolExecutor(max_workers=self.max_programs) as pool:
            scored = dict(zip(distinct, pool.map(lambda key: self.score(*key), distinct)))
        scores = [scored[key] for key in keys]
        with self._lock:
            self.samples += len(solution_strs)
            self.seconds += time.perf_counter() - start
        return [{"score": s, "acc": float(s == 1.0)} for s in scores]

    def stats(self) -> dict[str, float]:
        return {"samples": self.samples, "programs_run": self.programs, "sandbox_runs": self.sandbox_runs,
                "scoring_seconds": round(self.seconds, 2),
                "sandbox_runs_per_s": round(self.sandbox_runs / self.seconds, 1) if self.seconds else 0.0}
