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
