"""LocalSandbox speaks Sandbox Fusion's /run_code bodies, and fails closed where it cannot isolate."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import textwrap

import pytest

import verl
from verl.utils.reward_score.sandbox_fusion import LocalSandbox

# RunCodeResponse and CommandRunResult of SandboxFusion's sandbox/server/sandbox_api.py and runners/types.py
RESPONSE_KEYS = {"status", "message", "compile_result", "run_result", "executor_pod_name", "files"}
RUN_RESULT_KEYS = {"status", "execution_time", "return_code", "stdout", "stderr"}


def run(sandbox, code, **request):
    return sandbox.run_code({"code": code, "language": "python", **request})


def test_success_response_shape_stdin_and_exit_status(sandbox, no_leftovers):
    ok = run(sandbox, "import sys\nprint(sys.stdin.read().upper(), end='')\nsys.stderr.write('note')",
             stdin="abc\ndef", run_timeout=5)
    assert set(ok) == RESPONSE_KEYS and set(ok["run_result"]) == RUN_RESULT_KEYS
    assert ok["status"] == "Success" and ok["message"] == "" and ok["compile_result"] is None
    assert ok["run_result"]["status"] == "Finished" and ok["run_result"]["return_code"] == 0
    assert ok["run_result"]["stdout"] == "ABC\nDEF" and ok["run_result"]["stderr"] == "note"
    assert 0 < ok["run_result"]["execution_time"] < 5
    json.dumps(ok)  # a JSON body, as the server sends

    failed = run(sandbox, "import sys\nprint('partial')\nsys.exit(3)")
    assert failed["status"] == "Failed" and failed["run_result"]["return_code"] == 3
    assert failed["run_result"]["stdout"] == "partial\n"
    syntax = run(sandbox, "def broken(:\n")
    assert syntax["status"] == "Failed" and "SyntaxError" in syntax["run_result"]["stderr"]


def test_large_stdin_that_is_never_read(sandbox, no_leftovers):
    big = "x" * (4 * 1024 * 1024)
    assert run(sandbox, "print(len(input()))", stdin=big + "\n")["run_result"]["stdout"] == f"{len(big)}\n"
    assert run(sandbox, "print('ignores stdin')", stdin=big)["status"] == "Success"


def test_files_in_and_fetch_files_out(sandbox, no_leftovers):
    code = textwrap.dedent("""
        data = open("data/in.txt").read()
        open("out.txt", "w").write(data[::-1])
    """)
    response = run(sandbox, code, files={"data/in.txt": base64.b64encode(b"hello").decode()},
                   fetch_files=["out.txt", "missing.txt", "../../etc/ld.so.cache"])
    assert response["status"] == "Success"
    assert response["files"] == {"out.txt": base64.b64encode(b"olleh").decode()}


def test_memory_limit_of_the_request_applies(sandbox, no_leftovers):
    code = "x = bytearray(300 * 1024 * 1024)\nprint('allocated')"
    assert run(sandbox, code, memory_limit_MB=200)["status"] == "Failed"
    assert run(sandbox, code, memory_limit_MB=1024)["run_result"]["stdout"] == "allocated\n"


def test_bad_requests_are_sandbox_errors(sandbox):
    for request, match in [({"code": "print(1)", "language": "cpp"}, "not supported by the local sandbox"),
                           ({"language": "python"}, "code"),
                           ({"code": "print(1)", "language": "python", "run_timeout": -1}, "run_timeout"),
                           ({"code": "1", "language": "python", "files": {"/etc/x": ""}}, "relative"),
                           ({"code": "1", "language": "python", "files": {"a": "!!"}}, "invalid request")]:
        response = sandbox.run_code(request)
        assert response["status"] == "SandboxError" and response["run_result"] is None
        assert match in response["message"], response["message"]
    with pytest.raises(verl.InvalidArgumentError, match="max_processes"):
        LocalSandbox(max_processes=0)


def test_process_limit(sandbox, no_leftovers):
    code = textwrap.dedent("""
        import threading, time
        started = 0
        try:
            for _ in range(500):
                threading.Thread(target=time.sleep, args=(2,), daemon=True).start()
                started += 1
        except RuntimeError:
            pass
        print(started)
    """)
    started = int(run(LocalSandbox(max_processes=16), code)["run_result"]["stdout"])
    assert 0 < started < 16


_UNAVAILABLE = textwrap.dedent("""
    import ctypes, os
    libc = ctypes.CDLL(None, use_errno=True)
    uid, gid = os.geteuid(), os.getegid()
    assert libc.unshare(0x10000000) == 0, ctypes.get_errno()  # a user namespace of our own ...
    open("/proc/self/setgroups", "w").write("deny")
    open("/proc/self/uid_map", "w").write(f"0 {uid} 1")
    open("/proc/self/gid_map", "w").write(f"0 {gid} 1")
    open("/proc/sys/user/max_user_namespaces", "w").write("0")  # ... in which no further one may be made
    import json
    from verl.utils.reward_score.sandbox_fusion import LocalSandbox, SandboxUnavailableError
    box = LocalSandbox()
    response = box.run_code({"code": "print('ran')", "language": "python"})
    try:
        box.ensure_available()
        raised = None
    except SandboxUnavailableError as e:
        raised = str(e)
    print(json.dumps({"response": response, "raised": raised}))
""")


def test_fails_closed_without_user_namespaces(tmp_path):
    proc = subprocess.run([sys.executable, "-c", _UNAVAILABLE], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["response"]["status"] == "SandboxError" and out["response"]["run_result"] is None
    assert "namespaces unavailable" in out["response"]["message"] and "ENOSPC" in out["response"]["message"]
    assert out["raised"] and "namespaces unavailable" in out["raised"]
