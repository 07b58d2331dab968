"""Runs a snippet against the installed verl in a child process and reports how it ended.

The crash harness of issue 21: hostile inputs (fuzzing reproducers) run out of process, so a
regression that segfaults, aborts, hangs or exhausts memory fails one test with the signal in its
message instead of killing the pytest run. The child prints the exception class it ended with.
"""

from __future__ import annotations

import dataclasses
import os
import resource
import subprocess
import sys
import textwrap

# A child may not use more than this (a runaway allocation sized by an untrusted value must
# fail fast as MemoryError / a typed error, not take the machine's 24 GB).
MEMORY_LIMIT_BYTES = 8 << 30

_PRELUDE = """
import sys, traceback
def _report(exc):
    cls = type(exc)
    print("EXC:" + cls.__module__ + "." + cls.__qualname__, flush=True)
    print("MSG:" + ascii(str(exc))[1:-1], flush=True)
try:
{body}
except BaseException as exc:
    _report(exc)
    raise SystemExit(3)
print("EXC:none", flush=True)
"""


@dataclasses.dataclass
class Outcome:
    returncode: int
    exception: str  # "verl.errors.ConfigError", "none", or "" when the child died without reporting
    message: str
    stderr: str

    def describe(self) -> str:
        signal = f" (signal {-self.returncode})" if self.returncode < 0 else ""
        return f"exit {self.returncode}{signal}, exception {self.exception!r}: {self.message}\n{self.stderr[-2000:]}"


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))


def run_isolated(code: str, timeout: float = 120.0, cwd: str | None = None) -> Outcome:
    """Runs `code` (a Python snippet) in a fresh interpreter; returns how it ended."""
    body = textwrap.indent(textwrap.dedent(code), "    ")
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONFAULTHANDLER="1")
    try:
        proc = subprocess.run([sys.executable, "-c", _PRELUDE.format(body=body)], capture_output=True, text=True,
                              timeout=timeout, env=env, cwd=cwd, preexec_fn=_limit_memory)
    except subprocess.TimeoutExpired as e:
        return Outcome(-9, "", f"timed out after {timeout} s (a hang)", (e.stderr or b"").decode(errors="replace")
                       if isinstance(e.stderr, bytes) else (e.stderr or ""))
    exception, message = "", ""
    for line in proc.stdout.splitlines():
        if line.startswith("EXC:"):
            exception = line[4:]
        elif line.startswith("MSG:"):
            message = line[4:]
    return Outcome(proc.returncode, exception, message, proc.stderr)


def expect_verl_error(code: str, error: str, *fragments: str, timeout: float = 120.0, cwd: str | None = None) -> Outcome:
    """Asserts that `code` ends with verl.errors.<error> (or a subclass name given exactly) whose message holds
    every fragment; never a signal, a hang, or another exception class."""
    outcome = run_isolated(code, timeout=timeout, cwd=cwd)
    assert outcome.exception == f"verl.errors.{error}", outcome.describe()
    for fragment in fragments:
        assert fragment in outcome.message, outcome.describe()
    return outcome
