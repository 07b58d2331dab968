"""Sandbox test fixtures: one LocalSandbox, a check that no sandboxed process outlives its run, and a Sandbox
Fusion stub server on loopback that speaks ``POST /run_code`` (executing requests with a LocalSandbox)."""

from __future__ import annotations

import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from verl.utils.reward_score.sandbox_fusion import LocalSandbox
from verl.utils.reward_score.sandbox_fusion.utils import SUPPORTED_LANGUAGES


def pid_namespaces() -> dict[int, str]:
    """pid -> its PID namespace, for every process whose namespace this process may read."""
    out = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                out[int(entry)] = os.readlink(f"/proc/{entry}/ns/pid")
            except OSError:
                pass
    return out


@pytest.fixture(scope="session")
def sandbox() -> LocalSandbox:
    box = LocalSandbox(memory_limit_mb=256, max_output_bytes=64 * 1024)
    box.ensure_available()
    return box


@pytest.fixture
def no_leftovers():
    """Asserts after the test that no process lives in a PID namespace that did not exist before it (every
    sandbox run makes a new one, so a survivor of a run would be there)."""
    before = set(pid_namespaces().values())
    yield
    deadline = time.monotonic() + 2.0
    while True:
        left = {pid: ns for pid, ns in pid_namespaces().items() if ns not in before}
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert not left, f"processes left running after the sandbox run: {left}"


class StubSandboxFusion:
    """``POST /run_code`` as Sandbox Fusion serves it. ``mode``: ``execute`` (run the request in ``backend``),
    ``status:<code>`` (answer that HTTP status), ``garbage`` (a body that is not JSON), ``list`` (a JSON list),
    ``sleep:<s>`` (answer after s seconds). ``fail_first`` 504s come before the mode applies. Records every
    request body and the most requests in flight at once."""

    def __init__(self, backend: LocalSandbox) -> None:
        self.backend = backend
        self.mode = "execute"
        self.fail_first = 0
        self.delay = 0.0
        self.requests: list[dict] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with stub._lock:
                    stub.in_flight += 1
                    stub.max_in_flight = max(stub.max_in_flight, stub.in_flight)
                    attempt = len(stub.requests)
                # A request counts as in flight until its answer is about to be written: once the client has the
                # answer it may send the next one before this handler returns, which is not concurrency.
                try:
                    request = json.loads(body)
                    with stub._lock:
                        stub.requests.append(request)
                    if stub.delay:
                        time.sleep(stub.delay)
                except BaseException:
                    with stub._lock:
                        stub.in_flight -= 1
                    raise
                with stub._lock:
                    stub.in_flight -= 1
                self._answer(request, attempt)

            def _send(self, status: int, payload: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _answer(self, request: dict, attempt: int) -> None:
                if self.path != "/run_code":
                    return self._send(404, b'{"detail":"Not Found"}')
                if attempt < stub.fail_first:
                    return self._send(504, b"gateway timeout")
                mode = stub.mode
                if mode.startswith("status:"):
                    return self._send(int(mode.split(":")[1]), b'{"detail":"error"}')
                if mode == "garbage":
                    return self._send(200, b"<html>not json</html>")
                if mode == "list":
                    return self._send(200, b"[1, 2]")
                if mode.startswith("sleep:"):
                    time.sleep(float(mode.split(":")[1]))
                # Sandbox Fusion's request model: code required, language one of its Language values
                if not isinstance(request.get("code"), str) or request.get("language") not in SUPPORTED_LANGUAGES:
                    return self._send(422, b'{"detail":[{"msg":"field required"}]}')
                return self._send(200, json.dumps(stub.backend.run_code(request)).encode())

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/run_code"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stub_server(sandbox):
    stub = StubSandboxFusion(sandbox)
    yield stub
    stub.close()
