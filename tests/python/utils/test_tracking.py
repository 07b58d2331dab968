"""verl.utils.tracking (verl's Tracking interface, JSONL file format, console line) and verl.utils.plot."""

from __future__ import annotations

import io
import json
import math

import numpy as np
import pytest
import torch

import verl
from verl.utils.tracking import ConsoleLogger, Tracking, console_line, progress_line, read_metrics


def test_file_backend_writes_verls_jsonl_format(tmp_path, monkeypatch):
    monkeypatch.delenv("VERL_FILE_LOGGER_PATH", raising=False)
    monkeypatch.delenv("VERL_FILE_LOGGER_ROOT", raising=False)
    with Tracking("proj", "exp", default_backend=["file"], log_dir=str(tmp_path)) as tracker:
        tracker.log({"critic/score/mean": torch.tensor(0.25), "actor/lr": np.float32(1e-3), "n": 3,
                     "bad": float("nan"), "hist": np.array([1, 2])}, step=1)
        tracker.log({"critic/score/mean": 0.5}, step=2)
        path = tracker.metrics_path
    assert path == str(tmp_path / "proj" / "exp.jsonl")
    with open(path, encoding="utf-8") as f:
        lines = [json.loads(line) for line in f]
    assert lines[0] == {"step": 1, "data": {"critic/score/mean": 0.25, "actor/lr": pytest.approx(1e-3),
                                             "n": 3.0, "bad": None, "hist": [1.0, 2.0]}}
    assert read_metrics(path) == [(1, lines[0]["data"]), (2, {"critic/score/mean": 0.5})]


def test_file_logger_path_env_and_append_on_resume(tmp_path, monkeypatch):
    target = tmp_path / "m.jsonl"
    monkeypatch.setenv("VERL_FILE_LOGGER_PATH", str(target))
    with Tracking("p", "e", default_backend="file") as t:
        t.log({"x": 1}, step=1)
    with Tracking("p", "e", default_backend="file") as t:
        t.log({"x": 2}, step=2)
    assert [s for s, _ in read_metrics(str(target))] == [1, 2]


def test_console_line_picks_the_watched_metrics():
    line = console_line({"critic/score/mean": 0.4123, "response_length/mean": 9.84, "timing_s/step": 1.234,
                         "val-core/arith/acc/mean@1": 0.5, "val-core/gsm8k/acc/mean@1": 0.25,
                         "actor/other": 7}, step=12)
    assert line == "step 12 | reward 0.412 | acc 0.375 | resp_len 9.8 | step_s 1.23"
    out = io.StringIO()
    with Tracking("p", "e", default_backend="console", console_stream=out) as t:
        t.log({"actor/pg_loss": -0.01}, step=3)
    assert out.getvalue() == "step 3 | pg_loss -0.0100\n"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_line_bar_counts_and_eta():
    line = progress_line({"critic/score/mean": 0.5, "timing_s/step": 0.25}, step=30, total=120, eta_s=65.4, width=12)
    assert line == "[###.........] 30/120 | reward 0.500 | step_s 0.25 | eta 1m05s"
    assert progress_line({}, step=120, total=120, eta_s=0.0, width=4) == "[####] 120/120"


def test_console_logger_draws_a_bar_on_a_terminal_and_lines_elsewhere():
    term = _Terminal()
    logger = ConsoleLogger(term, total_steps=3)
    logger.log({"critic/score/mean": 0.1}, step=1)
    logger.log({"critic/score/mean": 0.2, "val-core/arith/acc/mean@1": 0.4}, step=2)  # validation: kept on screen
    logger.log({"critic/score/mean": 0.3}, step=3)
    logger.finish()
    out = term.getvalue()
    assert out.count("\r") == 3 and out.count("\n") == 2 and out.endswith("3/3 | reward 0.300\x1b[K\n")
    assert "2/3 | reward 0.200 | acc 0.400" in out
    plain = io.StringIO()  # not a terminal (CI logs, pipes): one line per step, as without total_steps
    ConsoleLogger(plain, total_steps=3).log({"critic/score/mean": 0.1}, step=1)
    assert plain.getvalue() == "step 1 | reward 0.100\n"


def test_unknown_backend_is_a_config_error_and_missing_package_warns(tmp_path, monkeypatch):
    with pytest.raises(verl.ConfigError, match="unknown backend 'wandbb'"):
        Tracking("p", "e", default_backend=["console", "wandbb"])
    try:
        import wandb  # noqa: F401
        pytest.skip("wandb is installed")
    except ImportError:
        pass
    monkeypatch.setenv("VERL_FILE_LOGGER_PATH", str(tmp_path / "m.jsonl"))
    with pytest.warns(RuntimeWarning, match="'wandb' but it is not installed"):
        t = Tracking("p", "e", default_backend=["wandb"], always_file=True)
    assert list(t.logger) == ["file"]
    t.finish()


def test_read_metrics_names_the_bad_line(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text('{"step": 1, "data": {}}\nnot json\n')
    with pytest.raises(ValueError, match=r"m.jsonl:2: not a metrics record"):
        read_metrics(str(path))


def test_plot_training_curves_writes_a_png(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    from verl.utils.plot import plot_training_curves

    monkeypatch.setenv("VERL_FILE_LOGGER_PATH", str(tmp_path / "m.jsonl"))
    with Tracking("p", "e", default_backend="file") as t:
        for step in range(1, 6):
            metrics = {"critic/score/mean": step / 10, "response_length/mean": 10 - step}
            if step % 2 == 1:
                metrics["val-core/arith/acc/mean@1"] = math.sqrt(step) / 3
            t.log(metrics, step)
    png = plot_training_curves(str(tmp_path / "m.jsonl"), str(tmp_path / "out" / "curves.png"), title="demo")
    with open(png, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
