"""``LocalSandbox``: Sandbox Fusion's ``/run_code`` on this machine, for users without a sandbox server.

``LocalSandbox().run_code(request)`` takes the request body Sandbox Fusion's ``POST /run_code`` takes
(``code``, ``language``, ``run_timeout``, ``memory_limit_MB``, ``stdin``, ``files`` as base64, ``fetch_files``)
and returns the response body it returns (``status`` Success / Failed / SandboxError, ``message``,
``run_result {status Finished / TimeLimitExceeded / Error, execution_time, return_code, stdout, stderr}``,
``files``), so the scorers in ``sandbox_fusion.utils`` run unchanged on either backend. Only ``python`` runs
locally; other languages are a ``SandboxError`` response.

Each run is a fresh process tree in new user / mount / network / PID / IPC / UTS namespaces
(``namespace_launcher.py`` says how): no network, a read-only file system showing only the interpreter and the
system libraries, a private size-capped tmpfs as the working directory (/tmp), rlimits on CPU seconds, address
space, file size, processes and open files. This side enforces the wall-clock timeout and the output cap and
then stops the launcher (which kills the namespace's PID 1, and with it every process the program started).
Where user namespaces are unavailable the response is a ``SandboxError`` naming the cause: nothing runs
unsandboxed.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

from ....errors import InvalidArgumentError, VerlError

__all__ = ["LocalSandbox", "SandboxUnavailableError", "LOCAL_LANGUAGES", "default_readonly_paths"]

LOCAL_LANGUAGES = ("python",)
_LAUNCHER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "namespace_launcher.py")
_MB = 1 << 20
# CPU seconds above the wall-clock timeout before RLIMIT_CPU fires (the wall clock is the limit that matters)
_CPU_SLACK_S = 1
# seconds a launcher gets to stop its sandbox after SIGTERM before it is killed
_STOP_GRACE_S = 5.0


class SandboxUnavailableError(VerlError):
    """The local sandbox cannot isolate programs on this machine (no user namespaces, ...): raised by
    ``LocalSandbox.ensure_available`` so that a job fails with the cause instead of scoring every sample 0."""


def _interpreter() -> str:
    """The real interpreter behind this (possibly virtual-env) Python: the one whose prefix we mount."""
    return os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)


def default_readonly_paths(python: str | None = None) -> list[str]:
    """What the program sees (read-only): /usr with the /bin, /sbin, /lib* links or directories, the dynamic
    loader's cache, the time zone, and the interpreter's installation prefix when it lives outside /usr."""
    paths = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc/ld.so.cache",
             "/etc/localtime"]
    python = os.path.realpath(python or _interpreter())
    prefix = os.path.dirname(os.path.dirname(python))  # <prefix>/bin/python3.x
    if python == os.path.realpath(_interpreter()):
        prefix = os.path.realpath(sys.base_prefix)
    if not any(prefix == p or prefix.startswith(p + "/") for p in paths if os.path.isdir(p)):
        paths.append(prefix)
    return paths


class LocalSandbox:
    """Runs Sandbox Fusion requests in a hardened local sandbox (see the module docstring).

    Args:
        python: interpreter for ``language: python`` (default: this Python's base interpreter).
        readonly_paths: host paths visible read-only inside (default ``default_readonly_paths(python)``); add a
            site-packages directory (and ``PYTHONPATH`` in ``env``) to let programs import its packages.
        memory_limit_mb: address-space limit when a request gives none (Sandbox Fusion's ``-1``).
        max_output_bytes: cap on each of stdout and stderr; a program writing more is killed (return code -9,
            a note on stderr).
        workdir_mb: size of the private tmpfs working directory (all files the program writes).
        max_processes: RLIMIT_NPROC of the program (processes and threads it may have at once).
        max_open_files: RLIMIT_NOFILE.
        max_parallel: runs at once across all threads using this object (default: the CPU count).
        env: the program's whole environment (nothing of this process's environment is passed).
    """

    def __init__(self, python: str | None = None, readonly_paths: list[str] | None = None,
                 memory_limit_mb: int = 1024, max_output_bytes: int = _MB, workdir_mb: int = 64,
                 max_processes: int = 64, max_open_files: int = 256, max_parallel: int | None = None,
                 env: dict[str, str] | None = None) -> None:
        for name, value in (("memory_limit_mb", memory_limit_mb), ("max_output_bytes", max_output_bytes),
                            ("workdir_mb", workdir_mb), ("max_processes", max_processes),
                            ("max_open_files", max_open_files)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidArgumentError(f"LocalSandbox: {name} must be an integer >= 1, got {value!r}")
        self.python = os.path.realpath(python) if python else _interpreter()
        if not os.access(self.python, os.X_OK):
            raise InvalidArgumentError(f"LocalSandbox: python interpreter {self.python!r} is not executable")
        self.readonly_paths = list(readonly_paths) if readonly_paths is not None else \
            default_readonly_paths(self.python)
        self.memory_limit_mb = memory_limit_mb
        self.max_output_bytes = max_output_bytes
        self.workdir_mb = workdir_mb
        self.max_processes = max_processes
        self.max_open_files = max_open_files
        self.env = dict(env) if env is not None else {
            "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8", "TMPDIR": "/tmp",
            "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1"}
        self._slots = threading.BoundedSemaphore(max_parallel or os.cpu_count() or 1)
        self._available: bool | None = None
        self._availability_lock = threading.Lock()

    def ensure_available(self) -> None:
        """Runs ``print(1)`` once (the result is cached); ``SandboxUnavailableError`` with the cause when the
        sandbox cannot be built here."""
        with self._availability_lock:
            if self._available:
                return
            response = self.run_code({"code": "print(1)", "language": "python", "run_timeout": 30})
            run = response.get("run_result") or {}
            if response["status"] != "Success" or run.get("stdout") != "1\n":
                raise SandboxUnavailableError(
                    f"the local code sandbox does not work on this machine: {response['message'] or run}")
            self._available = True

    # -- request -> response ----------------------------------------------------------------------------------
    def run_code(self, request: dict[str, Any]) -> dict[str, Any]:
        """One ``/run_code`` request; never raises for anything about the request or the program."""
        try:
            spec, run_timeout = self._spec(request)
        except (TypeError, ValueError, KeyError, binascii.Error) as e:
            return _response("SandboxError", f"invalid request: {e}")
        with self._slots:
            return self._run(spec, run_timeout, request.get("stdin"))

    __call__ = run_code

    def _spec(self, request: dict[str, Any]) -> tuple[dict[str, Any], float]:
        if not isinstance(request, dict):
            raise TypeError(f"request must be a dict, got {type(request).__name__}")
        language = request.get("language")
        if language not in LOCAL_LANGUAGES:
            raise ValueError(f"language {language!r} is not supported by the local sandbox (it runs "
                             f"{', '.join(LOCAL_LANGUAGES)}); use a Sandbox Fusion server for others")
        code = request["code"]
        if not isinstance(code, str):
            raise TypeError("code must be a string")
        stdin = request.get("stdin")
        if stdin is not None and not isinstance(stdin, str):
            raise TypeError("stdin must be a string or null")
        run_timeout = float(request.get("run_timeout", 10))
        if not math.isfinite(run_timeout) or run_timeout <= 0:
            raise ValueError(f"run_timeout must be > 0, got {run_timeout}")
        memory_mb = int(request.get("memory_limit_MB", -1))
        memory_mb = self.memory_limit_mb if memory_mb <= 0 else memory_mb
        files = {}
        for name, content in (request.get("files") or {}).items():
            if content is None:
                continue
            if not isinstance(name, str) or not name or os.path.isabs(name) or ".." in name.split("/"):
                raise ValueError(f"file path {name!r} must be relative and stay inside the working directory")
            files[name] = base64.b64decode(content, validate=True).decode("latin-1")
        files["main.py"] = code.encode("utf-8").decode("latin-1")
        fetch = request.get("fetch_files") or []
        if not isinstance(fetch, list) or not all(isinstance(f, str) for f in fetch):
            raise TypeError("fetch_files must be a list of paths")
        spec = {
            "workdir": "/tmp",
            "files": files,
            "ro_paths": self.readonly_paths,
            "tmpfs_bytes": self.workdir_mb * _MB,
            "argv": [self.python, "main.py"],
            "env": self.env,
            "fetch_files": fetch,
            "max_fetch_bytes": self.workdir_mb * _MB,
            "limits": {
                "cpu_seconds": math.ceil(run_timeout) + _CPU_SLACK_S,
                "address_space_bytes": memory_mb * _MB,
                "file_size_bytes": self.workdir_mb * _MB,
                "processes": self.max_processes,
                "open_files": self.max_open_files,
            },
        }
        return spec, run_timeout

    def _run(self, spec: dict[str, Any], run_timeout: float, stdin: str | None) -> dict[str, Any]:
        with tempfile.TemporaryDirectory(prefix="verl-sandbox-") as mount_point, \
                tempfile.TemporaryFile() as spec_file:
            os.chmod(mount_point, 0o755)  # empty; the sandbox's user (nobody, for a root caller) mounts on it
            spec = {**spec, "root": mount_point}
            spec_file.write(json.dumps(spec).encode())
            spec_file.flush()
            spec_file.seek(0)
            result_r, result_w = os.pipe()
            start = time.monotonic()
            try:
                proc = subprocess.Popen(
                    [sys.executable, "-I", "-S", _LAUNCHER, str(spec_file.fileno()), str(result_w)],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                    pass_fds=(spec_file.fileno(), result_w), start_new_session=True, env={}, cwd="/")
            except OSError as e:
                os.close(result_r)
                os.close(result_w)
                return _response("SandboxError", f"cannot start the sandbox launcher: {e}")
            os.close(result_w)
            try:
                io = _exchange(proc, result_r, (stdin or "").encode(), start + run_timeout, self.max_output_bytes)
            finally:
                _kill_group(proc)
                os.close(result_r)
                for stream in (proc.stdin, proc.stdout, proc.stderr):
                    if stream is not None and not stream.closed:
                        stream.close()
            elapsed = time.monotonic() - start
        return _finish(io, elapsed, self.max_output_bytes)


class _Exchange:
    """What came back from one run: the program's output and the supervisor's result."""

    def __init__(self) -> None:
        self.out = {"stdout": bytearray(), "stderr": bytearray(), "result": bytearray()}
        self.timed_out = False
        self.output_exceeded = False


def _exchange(proc: subprocess.Popen, result_fd: int, stdin: bytes, deadline: float, cap: int) -> _Exchange:
    """Feeds stdin and reads stdout / stderr / the result pipe until all close or the deadline / the output cap
    is reached (then the process group is killed and reading goes on to the end)."""
    io = _Exchange()
    sel = selectors.DefaultSelector()
    names = {proc.stdout.fileno(): "stdout", proc.stderr.fileno(): "stderr", result_fd: "result"}
    for fd in names:
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ)
    stdin_fd = proc.stdin.fileno()
    os.set_blocking(stdin_fd, False)
    if stdin:
        sel.register(stdin_fd, selectors.EVENT_WRITE)
    else:
        proc.stdin.close()
    pending = memoryview(stdin)
    open_reads = len(names)
    killed = False
    try:
        while open_reads:
            timeout = None if killed else max(0.0, deadline - time.monotonic())
            events = sel.select(timeout)
            if not events and not killed:
                io.timed_out = True
                _kill_group(proc)
                killed = True
                continue
            for key, _ in events:
                fd = key.fd
                if fd == stdin_fd:
                    try:
                        pending = pending[os.write(fd, pending[:65536]):]
                    except BlockingIOError:
                        continue
                    except BrokenPipeError:  # the program does not read its stdin: fine
                        pending = pending[:0]
                    if not pending:
                        sel.unregister(fd)
                        proc.stdin.close()
                    continue
                try:
                    chunk = os.read(fd, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    sel.unregister(fd)
                    open_reads -= 1
                    continue
                buf = io.out[names[fd]]
                room = cap - len(buf) if names[fd] != "result" else len(chunk)
                buf += chunk[:max(room, 0)]
                if names[fd] != "result" and len(chunk) > room and not killed:
                    io.output_exceeded = True
                    _kill_group(proc)
                    killed = True
    finally:
        sel.close()
        if proc.stdin and not proc.stdin.closed:
            try:
                proc.stdin.close()
            except OSError:
                pass
    return io


def _kill_group(proc: subprocess.Popen) -> None:
    """Stops a run and reaps the launcher: SIGTERM makes the launcher kill the supervisor (whose death takes
    the PID namespace with it) and reap it, so no zombie is left to the system's init. A launcher that does not
    exit within ``_STOP_GRACE_S`` gets SIGKILL with its process group (the supervisor then dies by
    ``PR_SET_PDEATHSIG``)."""
    if proc.poll() is None:
        try:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=_STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            try:  # the launcher is not reaped yet, so its pid still names this process group
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    proc.wait()


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _finish(io: _Exchange, elapsed: float, cap: int) -> dict[str, Any]:
    try:
        result = json.loads(bytes(io.out["result"]).decode()) if io.out["result"] else {}
    except (ValueError, UnicodeDecodeError):
        result = {}
    if "setup_error" in result:
        return _response("SandboxError", result["setup_error"])
    stdout, stderr = _decode(bytes(io.out["stdout"])), _decode(bytes(io.out["stderr"]))
    if io.timed_out:
        run = {"status": "TimeLimitExceeded", "execution_time": elapsed, "return_code": None,
               "stdout": stdout, "stderr": stderr}
        return _response("Failed", "", run)
    if io.output_exceeded:
        stderr += f"\n[sandbox] output exceeded {cap} bytes; the program was killed\n"
        run = {"status": "Finished", "execution_time": elapsed, "return_code": -signal.SIGKILL,
               "stdout": stdout, "stderr": stderr}
        return _response("Failed", "", run)
    if "return_code" not in result:
        return _response("SandboxError", "the sandbox ended without a result (launcher killed?)")
    code = result["return_code"]
    # RLIMIT_CPU's SIGXCPU is a time limit too (CPU seconds instead of wall-clock ones)
    status = "TimeLimitExceeded" if code == -signal.SIGXCPU else "Finished"
    run = {"status": status, "execution_time": elapsed, "return_code": code if status == "Finished" else None,
           "stdout": stdout, "stderr": stderr}
    files = {name: base64.b64encode(content.encode("latin-1")).decode() for name, content in
             result.get("files", {}).items()}
    return _response("Success" if status == "Finished" and code == 0 else "Failed", "", run, files)


def _response(status: str, message: str, run_result: dict | None = None, files: dict | None = None) -> dict:
    """Sandbox Fusion's ``RunCodeResponse`` body."""
    return {"status": status, "message": message, "compile_result": None, "run_result": run_result,
            "executor_pod_name": None, "files": files or {}}
