"""The kill test (issue 21): ``kill -9`` at random moments of a PPO run with ``trainer.save_freq=1`` and
``trainer.resume_mode=auto`` -- during training and inside checkpoint writes -- and a restart each time, until an
uninterrupted run finishes.

After every kill:

* every ``global_step_N`` directory is a complete checkpoint equal to the one the uninterrupted reference run wrote
  at step N (byte for byte; the optimizer archives value for value) and ``PPOTrainer.load_checkpoint`` loads it
  (weights, both optimizers, trainer state);
* the iteration file names one of them; what a killed save leaves behind is hidden (``.global_step_*``,
  ``.old_global_step_*``, the iteration file's temporary), never listed as a checkpoint, and gone after later saves;
* the restarted run resumes at (iteration-file step + 1): the step it loads, the first step it logs;
* every step any run logs has the uninterrupted run's metrics (DESIGN.md section 5: a resumed run continues exactly as
  an uninterrupted one would).

Every run is verl's CLI entry point, ``verl.trainer.main_ppo.main(argv)``, in a process forked from a server that
imported torch and verl once (a fresh interpreter per run would spend most of the time budget importing torch).
Two pieces of instrumentation change nothing the trainer does: a line ``RESUMED <step>`` once ``fit`` has loaded its
checkpoint, and a ``sys.setprofile`` probe on ``CheckpointDirectory.save`` that numbers the Python and C calls of a
save. The reference run records where in each save the phases begin (model files, optimizer state, trainer state,
rename into place, iteration file, pruning, deleting the pruned checkpoint); a kill run parks at a seeded call of one
phase and prints ``KILL-POINT``, and the test sends SIGKILL. That puts one kill in each phase of a checkpoint write;
the other kills come after a seeded random delay into training (and now and then land in a write too).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
import traceback
import warnings

# The phases of one ``CheckpointDirectory.save`` in the order the profiler meets them, each a predicate on the call's
# label: ``co_qualname`` for Python calls, ``<module>.<qualname>`` for C calls (``posix.replace`` is ``os.replace``,
# not ``str.replace``). "deleting" -- the first file deleted after the iteration file -- is pruning deleting the
# oldest checkpoint, which the saves of steps KEEP + 1 on do.
PHASES = (
    ("model files", lambda label: label == "PPOTrainer._write_model"),
    ("optimizer state", lambda label: label.endswith("save_optimizer")),
    ("trainer state", lambda label: label == "write_json"),
    ("rename into place", lambda label: label == "posix.replace"),
    ("iteration file", lambda label: label == "write_atomic"),
    ("pruning", lambda label: label == "CheckpointDirectory.prune"),
    ("deleting", lambda label: label == "posix.unlink"),
)
ITERATION_FILE = "latest_checkpointed_iteration.txt"
STAGING_PREFIXES = (".global_step_", ".old_global_step_", ITERATION_FILE + ".tmp.")


# ---------------------------------------------------------------------------------------------------------------
# The server and its runs: ``python test_kill_resume.py --serve`` reads one JSON request per line on stdin, forks a
# run for it, and answers ``PID <pid>`` then ``EXIT <exit code, -signal when killed>``.
# ---------------------------------------------------------------------------------------------------------------

def _label(frame, event, arg) -> str | None:
    if event == "call":
        return frame.f_code.co_qualname
    if event == "c_call":
        module = getattr(arg, "__module__", None)
        name = getattr(arg, "__qualname__", None) or getattr(arg, "__name__", "?")
        return f"{module}.{name}" if module else name
    return None


class _SaveProbe:
    """A ``sys.setprofile`` function for one save: numbers its calls from 1, notes the call at which each phase
    begins and, given ``(phase, skip)``, parks the process ``skip`` calls after that phase began."""

    def __init__(self, park_at: tuple[int, int] | None = None) -> None:
        self.calls = 0
        self.phase_starts: list[int] = []
        self.park_at = park_at

    def __call__(self, frame, event, arg) -> None:
        label = _label(frame, event, arg)
        if label is None:
            return
        self.calls += 1
        if len(self.phase_starts) < len(PHASES) and PHASES[len(self.phase_starts)][1](label):
            self.phase_starts.append(self.calls)
        if self.park_at is not None:
            phase, skip = self.park_at
            if len(self.phase_starts) > phase and self.calls >= self.phase_starts[phase] + skip:
                _park(f"phase {PHASES[phase][0]!r}, call {self.calls}")


def _park(where: str) -> None:
    """Tells the test to kill this process now and waits for it (the SIGKILL ends the sleep)."""
    sys.setprofile(None)
    print(f"KILL-POINT {where}", flush=True)
    while True:
        time.sleep(60)


def _instrument() -> None:
    """Wraps ``PPOTrainer._load_checkpoint`` (prints ``RESUMED <step>``) and ``CheckpointDirectory.save`` (the probe,
    per the run's ``VERL_KILL_TEST`` request: record every save -- its phases and a copy of what it wrote -- or
    park at one)."""
    from verl.trainer import ppo_trainer
    from verl.trainer.checkpointing import CheckpointDirectory

    real_load, real_save = ppo_trainer.PPOTrainer._load_checkpoint, CheckpointDirectory.save
    recorded: list[dict] = []

    def load_checkpoint(self) -> None:
        real_load(self)
        print(f"RESUMED {self.global_steps}", flush=True)

    def save(self, step, write, max_to_keep=None):
        mode = json.loads(os.environ["VERL_KILL_TEST"])
        park_at = tuple(mode["park_at"]) if mode.get("kill_step") == step else None
        if park_at is None and "record" not in mode:
            return real_save(self, step, write, max_to_keep)
        probe = _SaveProbe(park_at)
        sys.setprofile(probe)
        try:
            path = real_save(self, step, write, max_to_keep)
        finally:
            sys.setprofile(None)
        if park_at is not None:  # the chosen call lies past the end of this save: kill right after it
            _park("end of save")
        recorded.append({"step": step, "calls": probe.calls, "phase_starts": probe.phase_starts})
        with open(os.path.join(mode["record"], "saves.json"), "w") as f:
            json.dump(recorded, f)
        shutil.copytree(path, os.path.join(mode["record"], os.path.basename(path)))  # pruning deletes the original
        return path

    ppo_trainer.PPOTrainer._load_checkpoint = load_checkpoint
    CheckpointDirectory.save = save


def _run_forked(line: str) -> None:
    """The forked run of one request: output to its log file, its environment, verl's CLI; never returns."""
    code = 1
    try:
        request = json.loads(line)
        fd = os.open(request["log"], os.O_WRONLY | os.O_APPEND)  # created by the test
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
        os.environ.update(request["env"])
        from verl.trainer.main_ppo import main

        code = main(request["argv"])
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _serve() -> None:
    import torch  # noqa: F401  what every run needs, imported once (no threads started: fork is safe)
    import verl.models.transformer  # noqa: F401
    import verl.trainer.main_ppo  # noqa: F401
    import verl.utils.plot  # noqa: F401

    try:  # fit() ends with the training-curve plot
        import matplotlib

        matplotlib.use("Agg", force=True)
        import matplotlib.pyplot  # noqa: F401
    except ImportError:
        pass
    _instrument()
    for line in sys.stdin:
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            _run_forked(line)
        print(f"PID {pid}", flush=True)
        _, status = os.waitpid(pid, 0)
        print(f"EXIT {os.waitstatus_to_exitcode(status)}", flush=True)


if __name__ == "__main__":
    assert sys.argv[1:] == ["--serve"], sys.argv
    _serve()
    sys.exit(0)


# ---------------------------------------------------------------------------------------------------------------
# The test.
# ---------------------------------------------------------------------------------------------------------------

import pytest  # noqa: E402  (below the server's entry point: the server needs neither pytest nor the helpers)

from trainer_helpers import toy_overrides  # noqa: E402

TOTAL_STEPS = 20
KEEP = 2          # trainer.max_actor_ckpt_to_keep: pruning is part of every save from step KEEP + 1 on
SAVE_KILLS = len(PHASES)  # kills parked inside a checkpoint save, one per phase (seeded order and call)
TIMED_KILLS = 4   # kills after a seeded random delay into training
SEED = 21
TIMEOUT_S = 120


class Server:
    """The fork server (one run at a time); a thread collects its ``PID`` / ``EXIT`` answers."""

    def __init__(self, tmp_path) -> None:
        self.tmp_path = tmp_path
        self.stderr_path = tmp_path / "server.stderr"
        env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONFAULTHANDLER": "1"}
        with open(self.stderr_path, "w") as stderr:
            self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--serve"], cwd=tmp_path,
                                         env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                                         text=True)
        self.answers: list[str] = []
        self._cond = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.current: Run | None = None

    def _read(self) -> None:
        for line in self.proc.stdout:
            with self._cond:
                self.answers.append(line.strip())
                self._cond.notify_all()
        self.proc.stdout.close()

    def answer(self, index: int, timeout: float | None = TIMEOUT_S) -> str | None:
        """Answer number ``index`` (0-based), waiting up to ``timeout`` seconds; None if it has not come in that
        time (with timeout 0: not yet). Fails if the server has ended without giving it."""
        with self._cond:
            self._cond.wait_for(lambda: len(self.answers) > index or self.proc.poll() is not None, timeout)
        if self.proc.poll() is not None:
            self._reader.join()  # the server's last answers may still be in the pipe
        with self._cond:
            if len(self.answers) > index:
                return self.answers[index]
        assert self.proc.poll() is None and timeout == 0, (
            f"fork server: no answer {index}:\n{self.stderr_path.read_text()[-3000:]}")
        return None

    def start(self, name: str, argv: list[str], mode: dict) -> "Run":
        run = Run(self, name, len(self.answers))
        request = {"argv": argv, "log": run.log_path, "env": {
            "VERL_FILE_LOGGER_PATH": run.metrics_path, "VERL_KILL_TEST": json.dumps(mode)}}
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        run.pid = int(self.answer(run.answers_from).split()[1])
        self.current = run
        return run

    def close(self) -> None:
        if self.current is not None and self.current.exit_code(0) is None:
            os.kill(self.current.pid, signal.SIGKILL)
        self.proc.stdin.close()
        self.proc.wait(timeout=TIMEOUT_S)
        self._reader.join()


class Run:
    """One training run forked by the server: its log (stdout and stderr), its JSONL metrics, its exit."""

    def __init__(self, server: Server, name: str, answers_from: int) -> None:
        self.server, self.name, self.answers_from = server, name, answers_from
        self.log_path = str(server.tmp_path / "logs" / f"{name}.log")
        self.metrics_path = str(server.tmp_path / "metrics" / f"{name}.jsonl")
        os.makedirs(os.path.dirname(self.log_path), exist_ok=True)
        open(self.log_path, "w").close()
        self.pid = -1

    def exit_code(self, timeout: float | None = TIMEOUT_S) -> int | None:
        answer = self.server.answer(self.answers_from + 1, timeout)
        return None if answer is None else int(answer.split()[1])

    def output(self) -> str:
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def wait_line(self, prefix: str) -> str:
        """The first output line starting with ``prefix``; fails if the run ends or times out first."""
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            ended = self.exit_code(0) is not None  # before reading: what it printed before ending is in the file
            for line in self.output().splitlines():
                if line.startswith(prefix):
                    return line
            if ended or time.monotonic() > deadline:
                pytest.fail(f"{self.name}: no {prefix!r} line (exit {self.exit_code(0)}):\n{self.output()[-3000:]}")
            time.sleep(0.002)

    def kill(self) -> None:
        assert self.exit_code(0) is None, f"{self.name} ended before its kill:\n{self.output()[-3000:]}"
        os.kill(self.pid, signal.SIGKILL)
        assert self.exit_code() == -signal.SIGKILL, f"{self.name}:\n{self.output()[-3000:]}"

    def finish(self) -> None:
        assert self.exit_code() == 0, f"{self.name}:\n{self.output()[-3000:]}"

    def records(self) -> list[tuple[int, dict]]:
        """The (step, metrics) records logged; a killed run's last line may be cut short, so whole lines only."""
        if not os.path.exists(self.metrics_path):
            return []
        with open(self.metrics_path, encoding="utf-8") as f:
            lines = f.read().split("\n")[:-1]
        return [(r["step"], r["data"]) for r in map(json.loads, lines)]


@pytest.fixture
def server(tmp_path):
    srv = Server(tmp_path)
    yield srv
    srv.close()


def _iteration(root: str) -> int:
    path = os.path.join(root, ITERATION_FILE)
    if not os.path.exists(path):
        return 0
    with open(path, encoding="utf-8") as f:
        return int(f.read())


def _step_of(name: str) -> int | None:
    prefix = "global_step_"
    return int(name[len(prefix):]) if name.startswith(prefix) and name[len(prefix):].isdigit() else None


def _optimizer_state(path: str) -> list[tuple[str, object]]:
    """An ``optim.pt`` (libtorch's optimizer archive with verl's scheduler fields) as (name, value) pairs in parameter
    order. The archive names each parameter's AdamW state by the address of the tensor in the process that wrote it
    and carries a random serialization id, so equal states never have equal bytes across processes; its loader
    matches states to parameters by position, and so does this."""
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.jit.load is deprecated; it is the reader of this format
        module = torch.jit.load(path)
    values: list[tuple[str, object]] = list(module.named_parameters())  # scheduler fields, group sizes
    groups, states = module.param_groups._c, module.state._c
    for g in range(int(groups.getattr("param_groups/size"))):
        group = groups.getattr(f"param_groups/{g}")
        options = group.getattr("options")
        values += [(f"group {g} {o}", options.getattr(o)) for o in ("lr", "betas", "eps", "weight_decay", "amsgrad")]
        for i in range(int(group.getattr("params/size"))):
            key = group.getattr(f"params/{i}")
            state = states.getattr(key) if states.hasattr(key) else None
            for field in ("step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"):
                has = state is not None and state.hasattr(field)
                values.append((f"group {g} param {i} {field}", state.getattr(field) if has else None))
    return values


def _assert_same_checkpoint(path: str, want: str) -> None:
    """``path`` holds the files of ``want``, equal byte for byte (optimizer archives: value for value)."""
    import torch

    def files(root: str) -> list[str]:
        return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, names in os.walk(root) for f in names)

    assert files(path) == files(want), path
    for rel in files(want):
        got_path, want_path = os.path.join(path, rel), os.path.join(want, rel)
        if os.path.basename(rel) == "optim.pt":
            got, expected = _optimizer_state(got_path), _optimizer_state(want_path)
            assert [name for name, _ in got] == [name for name, _ in expected], got_path
            for (name, a), (_, b) in zip(got, expected):
                assert torch.equal(a, b) if isinstance(a, torch.Tensor) else a == b, (got_path, name)
        else:
            with open(got_path, "rb") as f, open(want_path, "rb") as g:
                assert f.read() == g.read(), f"{got_path} differs from the reference"


def _check_metrics(run: Run, reference: dict[int, dict]) -> None:
    from test_ppo_trainer import same, wall_clock_dependent

    for step, data in run.records():
        assert data["training/global_step"] == step
        for key, want in reference[step].items():
            if not wall_clock_dependent(key):
                assert same(data[key], want), (run.name, step, key, data[key], want)


def test_kill_9_during_training_and_checkpoint_writes(tiny_model_dir, toy_data, tmp_path, server):
    from verl import PPOTrainer, RLConfig
    from verl.trainer.checkpointing import CheckpointDirectory

    scorer = tmp_path / "score.py"
    scorer.write_text("def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n"
                      "    return sum(c.isdigit() for c in solution_str) / max(len(solution_str), 1)\n")

    def overrides(out: str) -> list[str]:
        # gae: actor and critic, both optimizers; shuffled data over several epochs: the dataloader position matters
        return [*toy_overrides(tiny_model_dir, str(tmp_path / out), "gae", TOTAL_STEPS),
                f"data.train_files={toy_data['train']}", "data.shuffle=true", "data.seed=5", "trainer.total_epochs=8",
                f"custom_reward_function.path={scorer}", "custom_reward_function.name=compute_score",
                "trainer.save_freq=1", "trainer.resume_mode=auto", f"trainer.max_actor_ckpt_to_keep={KEEP}"]

    # The uninterrupted run: every step's metrics, every save's files and phase boundaries.
    record = tmp_path / "reference_saves"
    record.mkdir()
    ref_run = server.start("reference", overrides("reference"), {"record": str(record)})
    ref_run.finish()
    reference = dict(ref_run.records())
    assert sorted(reference) == list(range(1, TOTAL_STEPS + 1))
    ref_saves = {s["step"]: s for s in json.loads((record / "saves.json").read_text())}
    assert sorted(ref_saves) == list(range(1, TOTAL_STEPS + 1))
    for s in ref_saves.values():
        assert len(s["phase_starts"]) == len(PHASES) - (s["step"] <= KEEP), s  # every phase met
    # a step plus its save (the recording makes the reference's saves slower): timed kills come within ~2 steps
    step_s = sum(reference[s]["timing_s/step"] + reference[s]["timing_s/save_checkpoint"]
                 for s in reference) / TOTAL_STEPS

    root = str(tmp_path / "runs" / "ckpt")
    argv = overrides("runs")
    loader = PPOTrainer(config=RLConfig(overrides=argv), reward_fn=lambda response: 0.0)
    loaded: set[int] = set()

    def check_checkpoints() -> tuple[int, set[int], set[str]]:
        """Checks the checkpoint directory after a kill; returns the iteration step, the checkpoint steps and the
        staging leftovers."""
        names = set(os.listdir(root)) if os.path.isdir(root) else set()
        steps = {_step_of(n) for n in names} - {None}
        leftovers = {n for n in names if n.startswith(STAGING_PREFIXES)}
        assert names == {f"global_step_{s}" for s in steps} | leftovers | ({ITERATION_FILE} & names), names
        assert CheckpointDirectory(root).steps() == sorted(steps)  # staging leftovers are never a checkpoint
        iteration = _iteration(root)
        if iteration:
            assert iteration in steps, (iteration, names)
        # only a kill between the rename and the iteration-file update leaves a checkpoint past the iteration file
        assert all(s <= iteration + 1 for s in steps), (iteration, names)
        for s in steps:
            path = os.path.join(root, f"global_step_{s}")
            _assert_same_checkpoint(path, str(record / f"global_step_{s}"))
            if s not in loaded:  # equal checkpoints load alike: load each step's once
                loader.load_checkpoint(path)
                assert loader.global_steps == s
                loaded.add(s)
        return iteration, steps, leftovers

    rng = random.Random(SEED)
    kinds = ["save"] * SAVE_KILLS + ["timed"] * TIMED_KILLS
    rng.shuffle(kinds)
    phases = list(range(len(PHASES)))
    rng.shuffle(phases)
    in_write = 0
    iteration, leftovers = 0, set()
    for i, kind in enumerate(kinds):
        # a save kill needs its step to come (kill_step <= TOTAL_STEPS), a timed one a run that outlasts its delay
        assert iteration <= TOTAL_STEPS - 3, "too few steps left for the remaining kills"
        if kind == "save":
            # a save of this run's first or second step, at a seeded call of one phase (the range of calls taken
            # from the reference run's save of that step)
            kill_step = iteration + 1 + rng.randint(0, 1)
            phase = phases.pop()
            if PHASES[phase][0] == "deleting":  # a save that deletes a checkpoint: kill it mid-deletion
                kill_step = max(kill_step, KEEP + 1)
            starts, calls = ref_saves[kill_step]["phase_starts"], ref_saves[kill_step]["calls"]
            end = starts[phase + 1] if phase + 1 < len(starts) else calls + 1
            mode = {"kill_step": kill_step, "park_at": [phase, rng.randrange(end - starts[phase])]}
        else:
            mode = {}
        run = server.start(f"run{i}", argv, mode)
        resumed = int(run.wait_line("RESUMED ").split()[1])
        assert resumed == iteration, f"{run.name} resumed at {resumed + 1}, the iteration file said {iteration}"
        if kind == "save":
            run.wait_line("KILL-POINT")
        else:
            time.sleep(rng.uniform(0.0, 1.5 * step_s))
        run.kill()
        records = run.records()
        if records:
            assert records[0][0] == iteration + 1, (run.name, records[0][0], iteration)
        _check_metrics(run, reference)
        new_iteration, steps, new_leftovers = check_checkpoints()
        assert new_iteration >= iteration
        # a kill inside a write leaves its staging directory, the iteration file's temporary, or a checkpoint
        # renamed into place before the iteration file names it
        if new_leftovers - leftovers or max(steps, default=0) > new_iteration:
            in_write += 1
        # the history is printed (pytest shows it with a failure or -s)
        print(f"{run.name}: {kind} kill {mode}, resumed at {iteration + 1}, {len(records)} steps logged; then "
              f"iteration {new_iteration}, checkpoints {sorted(steps)}, leftovers {sorted(new_leftovers)}")
        iteration, leftovers = new_iteration, new_leftovers

    assert in_write >= 3, f"only {in_write} of {len(kinds)} kills landed inside a checkpoint write"

    final = server.start("final", argv, {})
    assert int(final.wait_line("RESUMED ").split()[1]) == iteration
    final.finish()
    assert [step for step, _ in final.records()] == list(range(iteration + 1, TOTAL_STEPS + 1))
    _check_metrics(final, reference)
    # every leftover removed by a later save; the newest KEEP checkpoints kept
    assert check_checkpoints() == (TOTAL_STEPS, {TOTAL_STEPS - 1, TOTAL_STEPS}, set())
