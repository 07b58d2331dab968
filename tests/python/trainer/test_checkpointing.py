"""verl.trainer.checkpointing: the global_step_N directories both trainers write (atomic save, iteration file,
pruning, resume modes, stale temporaries from a killed save)."""

from __future__ import annotations

import os

import pytest

import verl
from verl.trainer.checkpointing import ITERATION_FILE, CheckpointDirectory


def write_marker(text: str):
    def write(tmp: str) -> None:
        with open(os.path.join(tmp, "state.txt"), "w") as f:
            f.write(text)

    return write


def read_marker(path: str) -> str:
    with open(os.path.join(path, "state.txt")) as f:
        return f.read()


def test_save_resume_and_prune(tmp_path):
    ckpt = CheckpointDirectory(tmp_path / "ckpt")
    assert ckpt.resume_dir("auto", None) is None and ckpt.steps() == []
    for step in (1, 2, 3):
        path = ckpt.save(step, write_marker(f"s{step}"), max_to_keep=2)
        assert path == str(tmp_path / "ckpt" / f"global_step_{step}")
    assert ckpt.steps() == [2, 3]
    assert (tmp_path / "ckpt" / ITERATION_FILE).read_text() == "3"
    assert read_marker(ckpt.resume_dir("auto", None)) == "s3"
    assert ckpt.resume_dir("disable", None) is None
    assert read_marker(ckpt.resume_dir("resume_path", ckpt.step_dir(2))) == "s2"
    ckpt.save(3, write_marker("s3 again"))  # re-saving a step replaces it
    assert read_marker(ckpt.step_dir(3)) == "s3 again"
    assert sorted(os.listdir(ckpt.root)) == ["global_step_2", "global_step_3", ITERATION_FILE]


def test_a_failed_save_changes_nothing_and_leftovers_go_next_time(tmp_path):
    ckpt = CheckpointDirectory(tmp_path)
    ckpt.save(1, write_marker("s1"))

    def crash(tmp: str) -> None:
        write_marker("partial")(tmp)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ckpt.save(2, crash)
    assert sorted(os.listdir(tmp_path)) == ["global_step_1", ITERATION_FILE]
    # a process killed outright leaves its temporary directory: the next save removes it
    os.makedirs(tmp_path / ".global_step_2.abc123")
    ckpt.save(2, write_marker("s2"))
    assert sorted(os.listdir(tmp_path)) == ["global_step_1", "global_step_2", ITERATION_FILE]


def test_resume_errors(tmp_path):
    ckpt = CheckpointDirectory(tmp_path)
    with pytest.raises(verl.ConfigError, match="trainer.resume_from_path"):
        ckpt.resume_dir("resume_path", None)
    with pytest.raises(verl.ConfigError, match="global_step_N"):
        ckpt.resume_dir("resume_path", str(tmp_path))
    with pytest.raises(verl.ConfigError, match="resume_mode"):
        ckpt.resume_dir("sometimes", None)
    (tmp_path / ITERATION_FILE).write_text("7")
    with pytest.raises(verl.CheckpointError, match="names step 7"):
        ckpt.resume_dir("auto", None)
    (tmp_path / ITERATION_FILE).write_text("seven")
    with pytest.raises(verl.CheckpointError, match=ITERATION_FILE):
        ckpt.resume_dir("auto", None)


def test_pruning_never_deletes_the_checkpoint_just_saved(tmp_path):
    # A run saved steps 10 and 20 (max_to_keep=2); a second run resumes from step 10 (resume_path) and saves every 5
    # steps with max_to_keep=1. Pruning by step number alone deleted its global_step_15 at once (20 is higher) and left
    # the iteration file naming a missing directory.
    ckpt = CheckpointDirectory(tmp_path)
    for step in (10, 20):
        ckpt.save(step, write_marker(f"first run s{step}"), max_to_keep=2)
    ckpt.save(15, write_marker("second run s15"), max_to_keep=1)
    assert ckpt.steps() == [15, 20]  # 10 pruned; 20 is the first run's and stays
    assert read_marker(ckpt.resume_dir("auto", None)) == "second run s15"
    ckpt.save(16, write_marker("second run s16"), max_to_keep=2)
    assert ckpt.steps() == [15, 16, 20]
    ckpt.save(17, write_marker("second run s17"), max_to_keep=2)
    assert ckpt.steps() == [16, 17, 20]
    assert read_marker(ckpt.resume_dir("auto", None)) == "second run s17"
    ckpt.prune(1)  # without a saved step: the highest steps are the newest
    assert ckpt.steps() == [20]


def test_every_file_and_directory_is_fsynced_before_the_rename(tmp_path, monkeypatch):
    # What reaches the disk before the rename that publishes it: record which paths were fsynced when
    # global_step_1 appeared.
    synced: list[str] = []
    real_fsync, real_open, real_replace = os.fsync, os.open, os.replace
    fd_paths: dict[int, str] = {}

    def recording_open(path, flags, *args, **kwargs):
        fd = real_open(path, flags, *args, **kwargs)
        fd_paths[fd] = os.fspath(path)
        return fd

    def recording_fsync(fd):
        synced.append(fd_paths.get(fd, "?"))
        real_fsync(fd)

    published: dict[str, list[str]] = {}

    def recording_replace(src, dst):
        published[os.path.basename(os.fspath(dst))] = list(synced)
        real_replace(src, dst)

    monkeypatch.setattr(os, "open", recording_open)
    monkeypatch.setattr(os, "fsync", recording_fsync)
    monkeypatch.setattr(os, "replace", recording_replace)

    def write(tmp: str) -> None:
        os.makedirs(os.path.join(tmp, "actor"))
        for name in ("actor/model.safetensors", "trainer_state.json"):
            with open(os.path.join(tmp, name), "w") as f:
                f.write("x")

    ckpt = CheckpointDirectory(tmp_path)
    ckpt.save(1, write)
    before = published["global_step_1"]
    names = {os.path.relpath(p, tmp_path).split(os.sep, 1)[-1] for p in before}
    assert {"actor/model.safetensors", "trainer_state.json", "actor"} <= names, before
    assert any(os.path.dirname(p) == str(tmp_path) and os.path.basename(p).startswith(".global_step_1.")
               for p in before), before  # the staging directory itself
    # The root once per save, after its last rename (the iteration file's): both renames durable when save returns.
    assert synced.count(str(tmp_path)) == 1
    assert str(tmp_path) not in published[ITERATION_FILE]
    # ... and before pruning moves the previous checkpoint aside, so the iteration file on disk never names it.
    synced.clear()
    ckpt.save(2, write, max_to_keep=1)
    assert synced.count(str(tmp_path)) == 1
    assert published["ckpt"].count(str(tmp_path)) == 1, published["ckpt"]  # _move_aside renames it to <aside>/ckpt
    assert ckpt.steps() == [2]
