"""The child side of ``LocalSandbox``: builds the namespaces and runs one program in them.

Run by ``local_sandbox.py`` as ``python -I -S namespace_launcher.py SPEC_FD RESULT_FD`` in a new session, with
the program's stdin / stdout / stderr as its own. Standard library only and never imported by the package (it
runs under ``-I``, without verl on the path).

Three processes, each with one job:

1. **launcher** (this script's first process, outside the new PID namespace): ``unshare`` a user, mount,
   network, PID, IPC and UTS namespace, map one uid / gid (``SANDBOX_UID`` inside = the caller's outside), fork
   the supervisor and wait for it; on SIGTERM it kills the supervisor (and so the namespace) and reaps it. If
   ``unshare`` fails (user namespaces disabled, seccomp-filtered, ...) it reports ``setup_error`` and runs
   nothing: the sandbox fails closed.
2. **supervisor** (PID 1 of the new PID namespace; never runs untrusted code): dies with the launcher
   (``PR_SET_PDEATHSIG``), cannot be ptraced (not dumpable), and PID 1 ignores signals from inside its namespace,
   so the program cannot kill it. It builds the file system (below), forks the program, reaps everything until
   the program exits, reads ``fetch_files`` and writes the result. When it exits the kernel kills every process
   left in the namespace (fork bombs, daemons, ``setsid`` escapees).
3. **program**: its own session, rlimits (CPU seconds, address space, file size, processes, open files, no core
   files), ``PR_SET_NO_NEW_PRIVS``, a seccomp filter (x86-64: the system calls the namespaces do not cover fail
   with EPERM -- new namespaces, mounts, ptrace, kernel keyrings, modules, BPF, perf, io_uring, ...; see
   ``DENIED_SYSCALLS``), then ``execve``. Its uid inside is not 0, so ``execve`` clears the capabilities the
   namespace gave: it cannot mount, remount or unmount anything.

File system: a new root on a small tmpfs holding only read-only bind mounts of what the interpreter needs
(``ro_paths``: /usr and its /bin, /lib* symlinks, the interpreter's prefix, /etc/ld.so.cache), /dev/null, zero,
random, urandom (read-only mounts, so no chmod), a private read-write tmpfs at /tmp (the working directory, size-
capped) and, where the kernel allows it, a read-only /proc of the new PID namespace. Everything else (home
directories, the project, the host's /tmp, /proc, /sys, /run, /var) does not exist inside. The root itself is
remounted read-only. The network namespace has only a loopback device, down: no connection can be made.
"""

import ctypes
import errno
import json
import os
import resource
import signal
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MNT_DETACH = 2

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38

PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
AUDIT_ARCH_X86_64 = 0xC000003E
SECCOMP_RET_KILL_PROCESS = 0x80000000
SECCOMP_RET_ERRNO = 0x00050000
SECCOMP_RET_ALLOW = 0x7FFF0000
#: x86-64 system calls the program gets EPERM for: what would reach past the namespaces (new namespaces, mounts,
#: changing root), into other processes (ptrace, process_vm_*), the kernel's shared state (keyrings, modules, BPF,
#: perf, kexec, swap, clocks, host names, quotas, accounting, userfaultfd, file handles) or around the rest
#: (io_uring runs system calls this filter would not see).
DENIED_SYSCALLS = {
    "ptrace": 101, "personality": 135, "vhangup": 153, "pivot_root": 155, "chroot": 161, "acct": 163,
    "settimeofday": 164, "mount": 165, "umount2": 166, "swapon": 167, "swapoff": 168, "reboot": 169,
    "sethostname": 170, "setdomainname": 171, "iopl": 172, "ioperm": 173, "init_module": 175,
    "delete_module": 176, "quotactl": 179, "lookup_dcookie": 212, "clock_settime": 227, "kexec_load": 246,
    "add_key": 248, "request_key": 249, "keyctl": 250, "unshare": 272, "perf_event_open": 298,
    "name_to_handle_at": 303, "open_by_handle_at": 304, "setns": 308, "process_vm_readv": 310,
    "process_vm_writev": 311, "finit_module": 313, "kexec_file_load": 320, "bpf": 321, "userfaultfd": 323,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "open_tree": 428, "move_mount": 429,
    "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442,
}
SYS_CLONE = 56
#: clone3 passes its flags in memory the filter cannot read: ENOSYS makes the C library fall back to clone
SYS_CLONE3 = 435
#: clone flags that make a new namespace: EPERM
CLONE_NAMESPACES = 0x02000000 | 0x00020000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000

#: the uid / gid the program has inside (not 0, so execve drops the namespace's capabilities)
SANDBOX_UID = 1000
#: the host uid / gid the sandbox runs as when the caller is root
NOBODY = 65534
#: exit status of the program's child when execve itself failed (its message goes to its stderr)
EXEC_FAILED = 127
DEVICES = ("null", "zero", "random", "urandom")

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
_libc.unshare.argtypes = [ctypes.c_int]
_libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
_libc.syscall.restype = ctypes.c_long


class SetupError(Exception):
    """A step of building the sandbox failed: reported as ``setup_error``, nothing is run."""


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise SetupError(f"{what} failed: {errno.errorcode.get(err, err)} ({os.strerror(err)})")


def _b(s):
    return None if s is None else os.fsencode(s)


def mount(source, target, fstype, flags, data=None) -> None:
    _check(_libc.mount(_b(source), _b(target), _b(fstype), flags, _b(data)),
           f"mount({source!r}, {target!r}, {fstype!r}, {flags:#x})")


def prctl(option: int, arg: int) -> None:
    _check(_libc.prctl(option, arg, 0, 0, 0), f"prctl({option}, {arg})")


def pivot_root(new_root: str, put_old: str) -> None:
    sys_pivot_root = 155  # x86_64 and ...
    if os.uname().machine in ("aarch64", "arm64", "riscv64"):
        sys_pivot_root = 41
    _check(_libc.syscall(sys_pivot_root, _b(new_root), _b(put_old)), "pivot_root")


def write_result(fd: int, result: dict) -> None:
    data = json.dumps(result).encode()
    while data:
        data = data[os.write(fd, data):]


# --- launcher -------------------------------------------------------------------------------------------------

def is_host_root() -> bool:
    """uid 0 of the initial user namespace (the real root, whose processes RLIMIT_NPROC does not bind)."""
    try:
        with open("/proc/self/uid_map") as f:
            identity = f.read().split() == ["0", "0", "4294967295"]
    except OSError:
        identity = False
    return os.geteuid() == 0 and identity


def drop_root() -> None:
    """A caller that is root outside runs the sandbox as ``NOBODY``: the kernel exempts root's processes from
    RLIMIT_NPROC, and no file of the host's root should be the program's own. From here on root and
    unprivileged callers take the same path."""
    os.setgroups([])
    os.setresgid(NOBODY, NOBODY, NOBODY)
    os.setresuid(NOBODY, NOBODY, NOBODY)
    prctl(PR_SET_DUMPABLE, 1)  # the uid change made /proc/self root's; the maps below are written through it


def enter_namespaces() -> None:
    """New user, mount, network, PID (for the next child), IPC and UTS namespaces, the caller's uid and gid
    mapped to ``SANDBOX_UID``."""
    uid, gid = os.geteuid(), os.getegid()
    flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS
    if _libc.unshare(flags) != 0:
        err = ctypes.get_errno()
        raise SetupError(
            f"namespaces unavailable: unshare(user, mount, net, pid, ipc, uts) failed: "
            f"{errno.errorcode.get(err, err)} ({os.strerror(err)}); the local sandbox needs unprivileged user "
            "namespaces (sysctl kernel.unprivileged_userns_clone=1 / user.max_user_namespaces > 0, or a container "
            "runtime that allows unshare) and refuses to run code without them")
    try:
        with open("/proc/self/setgroups", "w") as f:  # an unprivileged writer may map only its own ids
            f.write("deny")
        with open("/proc/self/uid_map", "w") as f:
            f.write(f"{SANDBOX_UID} {uid} 1")
        with open("/proc/self/gid_map", "w") as f:
            f.write(f"{SANDBOX_UID} {gid} 1")
    except OSError as e:
        raise SetupError(f"namespaces unavailable: writing the uid/gid map failed: {e}") from e


# --- supervisor -----------------------------------------------------------------------------------------------

def _inside(root: str, path: str) -> str:
    return os.path.join(root, path.lstrip("/"))


def collect_sources(paths: list, stage: str = None) -> list:
    """``(path, symlink target or None, path to bind from, is_dir, noexec)`` for every existing path (and the
    devices). With ``stage`` (a root caller, in a mount namespace of its own) each is first bound under
    ``stage``, which the sandbox user can traverse where the original's parents (/root, mode 700) may not be."""
    sources = []
    for path in list(paths) + [f"/dev/{name}" for name in DEVICES]:
        if os.path.islink(path):
            sources.append((path, os.readlink(path), None, False, False))
        elif os.path.exists(path):
            is_dir, noexec = os.path.isdir(path), bool(os.statvfs(path).f_flag & os.ST_NOEXEC)
            origin = path
            if stage is not None:
                origin = _inside(stage, path)
                _make_target(origin, is_dir)
                mount(path, origin, None, MS_BIND | MS_REC)
            sources.append((path, None, origin, is_dir, noexec))
    return sources


def _make_target(target: str, is_dir: bool) -> None:
    if is_dir:
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if not os.path.exists(target):
            open(target, "w").close()


def stage_as_root(spec: dict) -> tuple:
    """For a root caller, before it drops root: a private mount namespace with every source bound under the
    mount point (``collect_sources``); returns ``(sources, where the sandbox's root goes)``."""
    _check(_libc.unshare(CLONE_NEWNS), "unshare(mount)")
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    stage = spec["root"]
    mount("tmpfs", stage, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755")
    sources = collect_sources(spec["ro_paths"], os.path.join(stage, "staged"))
    root = os.path.join(stage, "root")
    os.makedirs(root, mode=0o755)
    return sources, root


def _bind_readonly(root: str, source: tuple) -> None:
    """``source`` at the same path under ``root``, read-only, nosuid, nodev; a symlink as a symlink
    (``/lib -> usr/lib``). Device nodes keep working (their reads and writes are not file-system writes) but
    cannot be chmod-ed or replaced."""
    path, link, origin, is_dir, noexec = source
    target = _inside(root, path)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    if link is not None:
        if not os.path.lexists(target):
            os.symlink(link, target)
        return
    _make_target(target, is_dir)
    mount(origin, target, None, MS_BIND | MS_REC)
    # Flags the source mount has and a user namespace may not clear (they are locked) are kept; adding is allowed.
    device = path.startswith("/dev/")
    flags = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | (0 if device else MS_NODEV) | \
        (MS_NOEXEC if noexec or device else 0)
    mount(None, target, None, flags)


def _write_files(workdir: str, files: dict) -> None:
    """The program's files (text) into the working directory; paths must stay inside it."""
    for name, content in files.items():
        path = os.path.realpath(os.path.join(workdir, name))
        if not path.startswith(workdir + "/"):
            raise SetupError(f"file path {name!r} leaves the working directory")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(content.encode("latin-1"))


def build_root(spec: dict, sources: list, root: str) -> bool:
    """Mounts the sandbox's file system on ``root`` and makes it the root. True when /proc is mounted."""
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755")
    for source in sources:
        _bind_readonly(root, source)
    workdir = _inside(root, spec["workdir"])
    os.makedirs(workdir, exist_ok=True)
    mount("tmpfs", workdir, "tmpfs", MS_NOSUID | MS_NODEV, f"size={spec['tmpfs_bytes']},mode=1777")
    _write_files(workdir, spec["files"])
    proc = _inside(root, "/proc")
    os.makedirs(proc, exist_ok=True)
    try:  # refused where the host's /proc has parts masked (many container runtimes): then no /proc at all
        mount("proc", proc, "proc", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
        have_proc = True
    except SetupError:
        os.rmdir(proc)
        have_proc = False
    os.chdir(root)
    pivot_root(".", ".")  # the old root ends up stacked on the new one; detach it
    _check(_libc.umount2(b".", MNT_DETACH), "umount2(old root)")
    os.chdir("/")
    mount(None, "/", None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    os.chdir(spec["workdir"])
    return have_proc


def _limit(which: int, value) -> None:
    if value is not None:
        resource.setrlimit(which, (int(value), int(value)))


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def seccomp_program() -> list:
    """The classic-BPF filter as (code, jt, jf, k) tuples: on x86-64 (any other architecture or the x32 ABI is
    killed), DENIED_SYSCALLS and namespace-making clones fail with EPERM, clone3 with ENOSYS, the rest runs."""
    ld_abs, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    eperm, enosys = SECCOMP_RET_ERRNO | errno.EPERM, SECCOMP_RET_ERRNO | errno.ENOSYS
    denied = sorted(DENIED_SYSCALLS.values())
    # Layout: arch check, x32 check, one jeq per denied call, clone3, clone (+ its flags), then the returns.
    prog = [(ld_abs, 0, 0, 4), (jeq, 1, 0, AUDIT_ARCH_X86_64), (ret, 0, 0, SECCOMP_RET_KILL_PROCESS),
            (ld_abs, 0, 0, 0), (jge, 0, 1, 0x40000000), (ret, 0, 0, SECCOMP_RET_KILL_PROCESS)]
    checks = len(denied) + 4  # the denied jeqs, clone3's jeq, clone's jeq, its flag load and its jset
    for i, nr in enumerate(denied):  # to RET EPERM, which follows the checks and RET ALLOW
        prog.append((jeq, checks - i, 0, nr))
    prog.append((jeq, 3 + 2, 0, SYS_CLONE3))           # -> RET ENOSYS
    prog.append((jeq, 0, 2, SYS_CLONE))                # not clone -> RET ALLOW
    prog.append((ld_abs, 0, 0, 16))                    # clone's flags: the low word of args[0]
    prog.append((jset, 1, 0, CLONE_NAMESPACES))        # a new namespace -> RET EPERM
    prog += [(ret, 0, 0, SECCOMP_RET_ALLOW), (ret, 0, 0, eperm), (ret, 0, 0, enosys)]
    return prog


def install_seccomp() -> None:
    """Installs seccomp_program() on this process (after PR_SET_NO_NEW_PRIVS; inherited by everything it runs).
    Other architectures run without it (the namespaces still hold)."""
    if os.uname().machine != "x86_64":
        return
    prog = seccomp_program()
    filters = (_SockFilter * len(prog))(*(_SockFilter(*insn) for insn in prog))
    fprog = _SockFprog(len(prog), ctypes.cast(filters, ctypes.POINTER(_SockFilter)))
    _check(_libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(fprog), 0, 0), "seccomp filter")


def exec_program(spec: dict) -> None:
    """In the program's child: own session, rlimits, no new privileges, execve. Never returns."""
    try:
        os.setsid()
        limits = spec["limits"]
        cpu = limits.get("cpu_seconds")
        if cpu is not None:  # SIGXCPU at the soft limit, SIGKILL one second later
            resource.setrlimit(resource.RLIMIT_CPU, (int(cpu), int(cpu) + 1))
        _limit(resource.RLIMIT_AS, limits.get("address_space_bytes"))
        _limit(resource.RLIMIT_FSIZE, limits.get("file_size_bytes"))
        _limit(resource.RLIMIT_NPROC, limits.get("processes"))
        _limit(resource.RLIMIT_NOFILE, limits.get("open_files"))
        _limit(resource.RLIMIT_CORE, 0)
        prctl(PR_SET_NO_NEW_PRIVS, 1)
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        install_seccomp()
        os.execve(spec["argv"][0], spec["argv"], spec["env"])
    except BaseException as e:  # noqa: BLE001 -- reported on the program's stderr, then the child exits
        try:
            os.write(2, f"sandbox: cannot start {spec['argv'][0]}: {e}\n".encode())
        finally:
            os._exit(EXEC_FAILED)


def _fetch(spec: dict) -> dict:
    files = {}
    for name in spec.get("fetch_files", []):
        path = os.path.realpath(os.path.join(spec["workdir"], name))
        if path.startswith(spec["workdir"] + "/") and os.path.isfile(path):
            with open(path, "rb") as f:
                files[name] = f.read(spec["max_fetch_bytes"] + 1).decode("latin-1")
    return files


def supervise(spec: dict, result_fd: int, sources: list, root: str) -> None:
    """PID 1 of the new namespace. Never returns."""
    try:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        prctl(PR_SET_DUMPABLE, 0)
        have_proc = build_root(spec, sources, root)
        child = os.fork()
        if child == 0:
            os.close(result_fd)
            exec_program(spec)
        status = None
        while status is None:  # PID 1 reaps every orphan; stop when the program itself has exited
            try:
                pid, st = os.wait()
            except ChildProcessError:
                break
            if pid == child:
                status = st
        result = {"have_proc": have_proc, "files": _fetch(spec)}
        if status is not None and os.WIFSIGNALED(status):
            result["return_code"] = -os.WTERMSIG(status)
        elif status is not None:
            result["return_code"] = os.WEXITSTATUS(status)
        write_result(result_fd, result)
    except SetupError as e:
        write_result(result_fd, {"setup_error": str(e)})
    except BaseException as e:  # noqa: BLE001 -- any failure of ours is a setup error, reported, never raised
        write_result(result_fd, {"setup_error": f"sandbox supervisor failed: {type(e).__name__}: {e}"})
    os._exit(0)


def main() -> None:
    spec_fd, result_fd = int(sys.argv[1]), int(sys.argv[2])
    with os.fdopen(spec_fd, "rb") as f:
        spec = json.loads(f.read())
    os.set_inheritable(result_fd, True)
    # SIGTERM (the caller's "stop now": timeout, output cap) kills the supervisor, which takes the whole PID
    # namespace with it, and this process reaps it. Blocked until the handler knows the supervisor's pid.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        sources, root = None, spec["root"]
        if is_host_root():
            try:
                sources, root = stage_as_root(spec)
            except SetupError:  # root without CAP_SYS_ADMIN (a container): bind the paths as they are
                sources, root = None, spec["root"]
            drop_root()
        if sources is None:
            sources = collect_sources(spec["ro_paths"])
        enter_namespaces()
        supervisor = os.fork()
    except SetupError as e:
        write_result(result_fd, {"setup_error": str(e)})
        os._exit(0)
    except (OSError, ValueError) as e:
        write_result(result_fd, {"setup_error": f"preparing the sandbox failed: {e}"})
        os._exit(0)
    if supervisor == 0:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
        supervise(spec, result_fd, sources, root)
    os.close(result_fd)
    # only this process can reap the supervisor, so its pid cannot be reused before waitpid below returns
    signal.signal(signal.SIGTERM, lambda signum, frame: os.kill(supervisor, signal.SIGKILL))
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    os.waitpid(supervisor, 0)
    os._exit(0)


if __name__ == "__main__":
    main()
