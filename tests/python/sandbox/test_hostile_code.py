"""Hostile programs through the code scorer on the local sandbox: each is contained (reward 0, its error in the
metadata), this process is unaffected, and nothing the program started is left running."""

from __future__ import annotations

import os
import signal
import socket
import textwrap
import threading
import time

import pytest

from verl.utils.reward_score import default_compute_score, sandbox_fusion

REPO_README = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "README.md"))
TIMEOUT = 2  # run_timeout of the slow cases, seconds
NEVER = {"inputs": [""], "outputs": ["this output is never printed"]}


def score(sandbox, code: str, timeout: float = TIMEOUT, memory_limit_mb: int = 256):
    """(score, the one case's metadata, seconds) of ``code`` against a test nothing passes."""
    start = time.monotonic()
    value, metadata = sandbox_fusion.compute_score(sandbox, None, memory_limit_mb, f"```python\n{code}\n```",
                                                   NEVER, timeout=timeout)
    return value, metadata[0], time.monotonic() - start


def test_fork_bomb_is_cut_off_and_reaped(sandbox, no_leftovers):
    code = textwrap.dedent("""
        import os
        while True:
            try:
                os.fork()
            except OSError:
                pass
    """)
    value, meta, seconds = score(sandbox, code)
    assert value == 0.0 and meta["status"] == "timeout" and meta["run_status"] == "TimeLimitExceeded"
    assert seconds < TIMEOUT + 3


def test_infinite_loop_times_out(sandbox, no_leftovers):
    value, meta, seconds = score(sandbox, "while True:\n    pass")
    assert value == 0.0 and meta["status"] == "timeout"
    assert TIMEOUT - 0.1 <= seconds < TIMEOUT + 3


def test_sleeping_past_the_timeout(sandbox, no_leftovers):
    value, meta, seconds = score(sandbox, "import time\nprint('started', flush=True)\ntime.sleep(600)")
    assert value == 0.0 and meta["status"] == "timeout"
    assert meta["stdout"] == "started\n"  # what it wrote before the kill comes back
    assert seconds < TIMEOUT + 3


def test_memory_bomb_hits_the_address_space_limit(sandbox, no_leftovers):
    code = "chunks = []\nwhile True:\n    chunks.append(bytearray(64 * 1024 * 1024))"
    value, meta, seconds = score(sandbox, code, memory_limit_mb=200)
    assert value == 0.0 and meta["status"] == "runtime_error"
    assert "MemoryError" in meta["stderr"]
    assert seconds < TIMEOUT  # the limit stops it, not the clock


def test_huge_output_is_capped_and_killed(sandbox, no_leftovers):
    value, meta, seconds = score(sandbox, "while True:\n    print('x' * 100000)")
    assert value == 0.0 and meta["status"] == "runtime_error" and meta["exit_code"] == -signal.SIGKILL
    assert len(meta["stdout"]) <= sandbox.max_output_bytes
    assert "output exceeded" in meta["stderr"]
    assert seconds < TIMEOUT


def test_detached_daemon_does_not_outlive_the_run(sandbox, no_leftovers):
    # double fork + setsid: the classic way out of a process group; the PID namespace still takes it
    code = textwrap.dedent("""
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                time.sleep(600)
            os._exit(0)
        os.wait()
        print("daemon started")
    """)
    value, meta, _ = score(sandbox, code)
    assert value == 0.0 and meta["status"] == "wrong_answer" and meta["stdout"] == "daemon started\n"


def test_killing_its_parent_and_this_process_fails(sandbox, no_leftovers):
    host = os.getpid()
    code = textwrap.dedent(f"""
        import os, signal
        parent = os.getppid()
        for target in (parent, 1, -1):  # its supervisor (PID 1 of its namespace) and everything it can see
            try:
                os.kill(target, signal.SIGKILL)
            except OSError as e:
                print("kill", target, type(e).__name__)
        print("parent", parent, "still here")
        os.kill({host}, signal.SIGKILL)  # this test process, by its pid outside: not visible inside
    """)
    value, meta, _ = score(sandbox, code)
    assert value == 0.0 and meta["status"] == "runtime_error"
    assert "parent 1 still here" in meta["stdout"]
    assert "ProcessLookupError" in meta["stderr"]
    assert os.getpid() == host  # and we are obviously alive


def test_writing_outside_its_directory_fails(sandbox, tmp_path, no_leftovers):
    sentinel = tmp_path / "sentinel.txt"
    sentinel.write_text("untouched")
    targets = ["/etc/evil", "/usr/evil", "/evil", "/root/evil", "/dev/evil", str(tmp_path / "evil"),
               str(sentinel), os.path.join(os.path.dirname(REPO_README), "evil")]
    code = textwrap.dedent(f"""
        import os
        for path in {targets!r}:
            try:
                with open(path, "w") as f:
                    f.write("x")
                print("WROTE", path)
            except OSError as e:
                print("refused", path, type(e).__name__)
        for path in ("/usr", "/dev/null"):
            try:
                os.chmod(path, 0o777)
                print("CHMOD", path)
            except OSError as e:
                print("refused chmod", path, type(e).__name__)
        with open("/tmp/inside.txt", "w") as f:  # its own working directory is writable
            f.write("ok")
        print("inside", open("/tmp/inside.txt").read(), os.getcwd())
    """)
    value, meta, _ = score(sandbox, code)
    assert value == 0.0 and meta["status"] == "wrong_answer"
    out = meta["stdout"]
    assert "WROTE" not in out and "CHMOD" not in out, out
    assert out.count("refused") == len(targets) + 2
    assert "inside ok /tmp" in out
    assert sentinel.read_text() == "untouched" and not (tmp_path / "evil").exists()
    assert not os.path.exists("/evil") and not os.path.exists("/usr/evil")
    assert oct(os.stat("/dev/null").st_mode & 0o777) == "0o666"


def test_the_project_and_home_are_not_visible(sandbox, no_leftovers):
    secrets = [REPO_README, os.path.abspath(__file__), os.path.expanduser("~/.bash_history"), "/etc/passwd",
               "/etc/hostname"]
    code = textwrap.dedent(f"""
        import os, sys
        for path in {secrets!r}:
            try:
                open(path).read()
                print("LEAKED", path)
            except OSError as e:
                print("hidden", path, type(e).__name__)
        print("root", sorted(os.listdir("/")))
        print("stdlib", os.path.isfile(os.__file__))
        print("pids", sorted(int(p) for p in os.listdir("/proc") if p.isdigit()) if os.path.isdir("/proc") else [])
        try:
            open(os.__file__, "a")
        except OSError as e:
            print("stdlib read-only", type(e).__name__)
    """)
    value, meta, _ = score(sandbox, code)
    assert value == 0.0 and meta["status"] == "wrong_answer"
    out = meta["stdout"]
    assert "LEAKED" not in out and out.count("hidden") == len(secrets), out
    assert os.path.isfile(REPO_README)  # it exists out here
    # read-only rest of the file system: system directories and the interpreter only, no /work, /home, /var, /sys
    root = eval(out.split("root ", 1)[1].split("\n", 1)[0])
    assert set(root) <= {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "dev", "tmp", "proc",
                         "root", "home", "opt"}, root
    assert "work" not in root and "sys" not in root and "var" not in root
    assert "stdlib True" in out and "stdlib read-only" in out
    pids = eval(out.split("pids ", 1)[1].split("\n", 1)[0])
    assert pids in ([], [1, 2]), pids  # only its own namespace: the supervisor and itself


def test_network_is_unreachable(sandbox, no_leftovers):
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    listener.settimeout(0.2)
    port = listener.getsockname()[1]
    accepted = []

    def accept():
        try:
            accepted.append(listener.accept())
        except OSError:
            pass

    thread = threading.Thread(target=accept)
    thread.start()
    code = textwrap.dedent(f"""
        import socket
        for host in ("127.0.0.1", "1.1.1.1", "example.com"):
            try:
                socket.create_connection((host, {port} if host == "127.0.0.1" else 80), timeout=1).close()
                print("CONNECTED", host)
            except OSError as e:
                print("no network", host, type(e).__name__)
        print([name for _, name in socket.if_nameindex()])
    """)
    try:
        value, meta, _ = score(sandbox, code)
    finally:
        thread.join()
        listener.close()
    assert value == 0.0 and meta["status"] == "wrong_answer"
    assert "CONNECTED" not in meta["stdout"] and meta["stdout"].count("no network") == 3, meta["stdout"]
    assert "['lo']" in meta["stdout"]  # a network namespace of its own: loopback only (and down)
    assert accepted == []


@pytest.mark.parametrize("code", ["import os\nos.system('sleep 600 &')\nprint(1)",
                                  "import subprocess\nsubprocess.Popen(['sleep', '600'])\nprint(1)"])
def test_prime_code_default_path_contains_background_processes(code, no_leftovers):
    # the path a trainer takes for code data sources without a Sandbox Fusion URL
    result = default_compute_score("apps", f"```python\n{code}\n```", {"inputs": [""], "outputs": ["2"]})
    assert result == 0.0


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the seccomp filter is x86-64's")
def test_system_calls_past_the_namespaces_are_refused(sandbox, no_leftovers):
    """The seccomp filter: a nested user namespace (from which more would be reachable), ptrace, kernel keyrings and
    io_uring fail with EPERM (ptrace, keyctl and io_uring_setup succeed in the namespaces alone), while threads and
    child processes (clone without namespace flags; clone3 reports ENOSYS and the C library falls back) still work."""
    code = textwrap.dedent("""
        import ctypes, errno, subprocess, sys, threading
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        def refused(ret):
            return ret == -1 and ctypes.get_errno() == errno.EPERM
        results = {
            "unshare_user": refused(libc.unshare(0x10000000)),
            "ptrace_traceme": refused(libc.ptrace(0, 0, None, None)),
            "keyctl": refused(libc.syscall(250, 0, -3, 0, 0, 0)),
            "io_uring_setup": refused(libc.syscall(425, 1, ctypes.create_string_buffer(120))),
            "clone_newuser": refused(libc.syscall(56, 0x10000000 | 17, 0, 0, 0, 0)),
        }
        seen = []
        t = threading.Thread(target=seen.append, args=(1,))
        t.start(); t.join()
        results["thread"] = seen == [1]
        results["child"] = subprocess.run([sys.executable, "-c", "print(7)"], capture_output=True).stdout == b"7\\n"
        print(sorted(k for k, ok in results.items() if not ok))
    """)
    result = sandbox.run_code({"code": code, "language": "python", "run_timeout": 10})
    assert result["status"] == "Success", result
    assert result["run_result"]["stdout"] == "[]\n", result["run_result"]
