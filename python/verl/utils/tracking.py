"""Experiment tracking with verl's interface: ``Tracking(project, experiment, default_backend).log(data, step)``.

Backends (``trainer.logger``):

- ``console`` -- one compact line per step with the metrics a person watches (reward, accuracy,
  response length, losses, step time), not verl's dump of every key. With ``total_steps`` known and a
  terminal on the other end it is a progress bar instead, redrawn in place (``[#####.....] 120/400 ...
  eta 1m05s``), which leaves a line behind at each validation and at the end.
- ``file`` -- a JSONL file, one ``{"step": N, "data": {...}}`` object per line exactly as verl's
  ``FileLogger`` writes it, at ``$VERL_FILE_LOGGER_PATH`` or ``<root>/<project>/<experiment>.jsonl``
  (root ``$VERL_FILE_LOGGER_ROOT`` or the ``log_dir`` argument). Each line is flushed when logged,
  so a crashed run keeps every completed step. verl-cpp always writes it (see ``always_file``).
- ``tensorboard`` -- ``torch.utils.tensorboard`` at ``$TENSORBOARD_DIR`` or
  ``tensorboard_log/<project>/<experiment>``.
- ``wandb`` -- ``wandb.init(project, name, config)``; ``WANDB_MODE=offline`` works without network.

A backend that is configured but whose package is not installed is skipped with one warning: verl's
default ``trainer.logger`` is ``[console, wandb]`` and a laptop run must not fail for lack of wandb.
An unknown backend name is a ``ConfigError``.
"""

from __future__ import annotations

import json
import math
import numbers
import os
import sys
import time
import warnings
from typing import Any, Iterable, Mapping, TextIO

from verl.errors import ConfigError
from verl.utils.dataset.reader import decode_utf8

SUPPORTED_BACKENDS = ("console", "file", "tensorboard", "wandb")

# Console columns: (label, candidate metric keys in order of preference, format).
_CONSOLE_COLUMNS = (
    ("reward", ("critic/score/mean", "critic/rewards/mean"), "{:.3f}"),
    ("acc", ("val-core/acc",), "{:.3f}"),
    ("resp_len", ("response_length/mean",), "{:.1f}"),
    ("pg_loss", ("actor/pg_loss",), "{:.4f}"),
    ("vf_loss", ("critic/vf_loss",), "{:.4f}"),
    ("entropy", ("actor/entropy",), "{:.3f}"),
    ("kl", ("actor/kl_loss", "actor/ppo_kl"), "{:.4f}"),
    ("loss", ("train/loss",), "{:.4f}"),          # SFT
    ("val_loss", ("val/loss",), "{:.4f}"),        # SFT
    ("grad_norm", ("train/grad_norm",), "{:.3f}"),  # SFT
    ("lr", ("actor/lr", "train/lr"), "{:.2e}"),
    ("step_s", ("timing_s/step",), "{:.2f}"),
)


def _scalar(value: Any) -> float | None:
    """A Python float for numbers, 0-d tensors/arrays and 1-element sequences; None for anything else."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, numbers.Number):
        return float(value)
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "ndim", 0) == 0:
        return float(item())
    return None


def _json_value(value: Any) -> Any:
    scalar = _scalar(value)
    if scalar is not None:
        # JSON has no NaN/inf; verl's orjson writes null for them, and so do we.
        return scalar if math.isfinite(scalar) else None
    if isinstance(value, Mapping):
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        return _json_value(tolist())
    return value if isinstance(value, (str, type(None))) else str(value)


def console_line(data: Mapping[str, Any], step: int) -> str:
    """``step 12 | reward 0.412 | acc 0.530 | resp_len 9.8 | ...``: only the columns present in ``data``.

    ``acc`` is the mean of the ``val-core/<data_source>/.../mean@N`` accuracies when validation ran.
    """
    return " | ".join([f"step {step}", *_console_columns(data)])


def _console_columns(data: Mapping[str, Any]) -> list[str]:
    """``["reward 0.412", "acc 0.530", ...]``: the watched metrics present in ``data``."""
    values = dict(data)
    val_acc = [v for k, v in data.items() if k.startswith("val-core/") and "/acc/mean@" in k]
    if val_acc:
        values["val-core/acc"] = sum(float(v) for v in val_acc) / len(val_acc)
    parts = []
    for label, keys, fmt in _CONSOLE_COLUMNS:
        for key in keys:
            scalar = _scalar(values.get(key))
            if scalar is not None:
                parts.append(f"{label} {fmt.format(scalar)}")
                break
    return parts


def progress_line(data: Mapping[str, Any], step: int, total: int, eta_s: float | None = None, width: int = 24) -> str:
    """``[#########...............] 120/400 | reward 0.412 | ... | eta 1m05s``: the console line with a bar."""
    done = min(max(step, 0), total)
    filled = int(width * done / total) if total > 0 else width
    eta = ""
    if eta_s is not None and done < total:
        remaining = int(round(eta_s))
        eta = f" | eta {remaining // 60}m{remaining % 60:02d}s"
    rest = "".join(f" | {part}" for part in _console_columns(data))
    return f"[{'#' * filled}{'.' * (width - filled)}] {done}/{total}{rest}{eta}"


class ConsoleLogger:
    """Console lines, or a progress bar redrawn in place when ``total_steps`` is given and the stream is a TTY."""

    def __init__(self, stream: TextIO | None = None, total_steps: int | None = None) -> None:
        self.stream = stream
        self.total_steps = total_steps
        self._start: float | None = None
        self._first_step: int | None = None
        self._open_bar = False

    def _out(self) -> TextIO:
        return self.stream or sys.stdout

    def _is_bar(self) -> bool:
        isatty = getattr(self._out(), "isatty", None)
        return bool(self.total_steps) and callable(isatty) and isatty()

    def log(self, data: Mapping[str, Any], step: int) -> None:
        out = self._out()
        if not self._is_bar():
            print(console_line(data, step), file=out, flush=True)
            return
        total = int(self.total_steps or 0)
        now = time.monotonic()
        if self._start is None:  # the first logged step (a resumed run starts past 0)
            self._start, self._first_step = now, step
        steps_done = step - (self._first_step or 0)
        eta = (now - self._start) / steps_done * (total - step) if steps_done > 0 else None
        keep = step >= total or any(k.startswith("val-") for k in data)  # leave validations on screen
        out.write("\r" + progress_line(data, step, total, eta) + "\033[K" + ("\n" if keep else ""))
        out.flush()
        self._open_bar = not keep

    def finish(self) -> None:
        if self._open_bar:
            self._out().write("\n")
            self._out().flush()
            self._open_bar = False

    def log_generations(self, samples: list[tuple[str, str, float]], step: int) -> None:
        """``trainer.log_val_generations`` samples, one block each (verl logs them to its table trackers only)."""
        self.finish()
        out = self._out()
        for i, (prompt, response, score) in enumerate(samples, 1):
            print(f"[val generation {i}/{len(samples)}, step {step}] score {score:.3f}\n  input:  {prompt!r}\n"
                  f"  output: {response!r}", file=out, flush=True)


class FileLogger:
    """verl's JSONL metrics file: ``{"step": N, "data": {...}}`` per line, flushed per step."""

    def __init__(self, project_name: str, experiment_name: str, log_dir: str | None = None) -> None:
        path = os.environ.get("VERL_FILE_LOGGER_PATH")
        if path is None:
            root = os.path.expanduser(os.environ.get("VERL_FILE_LOGGER_ROOT", log_dir or "."))
            path = os.path.join(root, project_name, f"{experiment_name}.jsonl")
        directory = os.path.dirname(os.path.abspath(path))
        os.makedirs(directory, exist_ok=True)
        self.path = path
        # Append: a resumed run continues the same file rather than erasing the steps before it.
        self._file = open(path, "a", encoding="utf-8")

    def log(self, data: Mapping[str, Any], step: int) -> None:
        record = {"step": int(step), "data": {str(k): _json_value(v) for k, v in data.items()}}
        self._file.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._file.flush()

    def finish(self) -> None:
        if not self._file.closed:
            self._file.close()


class TensorboardLogger:
    def __init__(self, project_name: str, experiment_name: str) -> None:
        from torch.utils.tensorboard import SummaryWriter  # needs the `tensorboard` package

        directory = os.environ.get("TENSORBOARD_DIR", os.path.join("tensorboard_log", project_name, experiment_name))
        os.makedirs(directory, exist_ok=True)
        self.writer = SummaryWriter(directory)

    def log(self, data: Mapping[str, Any], step: int) -> None:
        for key, value in data.items():
            scalar = _scalar(value)
            if scalar is not None:
                self.writer.add_scalar(key, scalar, step)

    def log_generations(self, samples: list[tuple[str, str, float]], step: int) -> None:
        """verl's ``val/generations`` text: input, output and score of each sample."""
        text = f"**Generation Results - Step {step}**\n\n"
        for i, (prompt, response, score) in enumerate(samples, 1):
            text += f"### Sample {i}\n**Input:** {prompt}\n\n**Output:** {response}\n\n**Score:** {score}\n\n---\n\n"
        self.writer.add_text("val/generations", text, step)
        self.writer.flush()

    def finish(self) -> None:
        self.writer.close()


class WandbLogger:
    def __init__(self, project_name: str, experiment_name: str, config: Any) -> None:
        import wandb

        if config is not None and hasattr(config, "to_dict"):
            config = config.to_dict()
        self.run = wandb.init(project=project_name, name=experiment_name, entity=os.environ.get("WANDB_ENTITY"),
                              config=config)

    def log(self, data: Mapping[str, Any], step: int) -> None:
        self.run.log({k: v for k, v in ((k, _scalar(v)) for k, v in data.items()) if v is not None}, step=step)

    def log_generations(self, samples: list[tuple[str, str, float]], step: int) -> None:
        """verl's ``val/generations`` table: one row per validation, (input, output, score) per sample."""
        import wandb

        columns = ["step"] + [f"{name}_{i + 1}" for i in range(len(samples)) for name in ("input", "output", "score")]
        rows = list(self._generation_rows) if hasattr(self, "_generation_rows") else []
        rows.append([step] + [item for sample in samples for item in sample])
        self._generation_rows = rows
        self.run.log({"val/generations": wandb.Table(columns=columns, data=rows)}, step=step)

    def finish(self) -> None:
        self.run.finish()


class Tracking:
    """Logs a step's metrics to every configured backend (verl's ``verl.utils.tracking.Tracking``)."""

    supported_backend = list(SUPPORTED_BACKENDS)

    def __init__(self, project_name: str, experiment_name: str, default_backend: str | Iterable[str] = "console",
                 config: Any = None, log_dir: str | None = None, always_file: bool = False,
                 console_stream: TextIO | None = None, total_steps: int | None = None) -> None:
        backends = [default_backend] if isinstance(default_backend, str) else list(default_backend)
        for backend in backends:
            if backend not in SUPPORTED_BACKENDS:
                raise ConfigError(f"trainer.logger: unknown backend {backend!r}; supported: {', '.join(SUPPORTED_BACKENDS)}")
        if always_file and "file" not in backends:
            backends.append("file")
        self.logger: dict[str, Any] = {}
        self._finished = False
        for backend in dict.fromkeys(backends):
            if backend == "console":
                self.logger[backend] = ConsoleLogger(console_stream, total_steps)
            elif backend == "file":
                self.logger[backend] = FileLogger(project_name, experiment_name, log_dir)
            else:
                try:
                    self.logger[backend] = (TensorboardLogger(project_name, experiment_name) if backend == "tensorboard"
                                            else WandbLogger(project_name, experiment_name, config))
                except ImportError as e:
                    warnings.warn(f"trainer.logger lists {backend!r} but it is not installed ({e}); "
                                  f"not logging to {backend}", RuntimeWarning, stacklevel=2)

    @property
    def metrics_path(self) -> str | None:
        """The JSONL metrics file, when the ``file`` backend is active."""
        file_logger = self.logger.get("file")
        return file_logger.path if file_logger is not None else None

    def log(self, data: Mapping[str, Any], step: int, backend: Iterable[str] | None = None) -> None:
        for name, logger in self.logger.items():
            if backend is None or name in backend:
                logger.log(data, step)

    def log_generations(self, samples: list[tuple[str, str, float]], step: int) -> None:
        """Validation samples ``(input, output, score)`` to every backend that shows them (console, tensorboard,
        wandb; not the metrics file) -- verl's ``ValidationGenerationsLogger``."""
        for logger in self.logger.values():
            log = getattr(logger, "log_generations", None)
            if log is not None:
                log(samples, step)

    def finish(self) -> None:
        if self._finished:
            return
        self._finished = True
        for logger in self.logger.values():
            logger.finish()

    def __enter__(self) -> "Tracking":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.finish()

    def __del__(self) -> None:
        if hasattr(self, "_finished"):
            self.finish()


def tracking_from_config(config: Any, total_steps: int | None = None) -> Tracking:
    """The trainers' tracker: ``trainer.logger`` backends (console when unset) plus the JSONL file always,
    named by ``trainer.project_name`` / ``trainer.experiment_name``; a progress bar when ``total_steps`` is set."""
    backends = config.get("trainer.logger") or ["console"]
    backends = [backends] if isinstance(backends, str) else list(backends)
    return Tracking(project_name=str(config.get("trainer.project_name")),
                    experiment_name=str(config.get("trainer.experiment_name")), default_backend=backends,
                    config=config.to_dict(), always_file=True, total_steps=total_steps)


def read_metrics(path: str) -> list[tuple[int, dict[str, Any]]]:
    """The (step, metrics) records of a JSONL metrics file, in file order."""
    records = []
    with open(path, "rb") as f:
        text = decode_utf8(f.read(), path, ValueError)
    for line_number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            records.append((int(record["step"]), dict(record["data"])))
        except (ValueError, KeyError, TypeError, RecursionError) as e:
            raise ValueError(f"{path}:{line_number}: not a metrics record ({e})") from None
    return records


def select_val_generations(inputs: list[str], outputs: list[str], scores: list[float],
                           count: int) -> list[tuple[str, str, float]]:
    """verl's choice of the ``trainer.log_val_generations`` samples: (input, output, score) sorted by input, shuffled
    with ``np.random.RandomState(42)``, the first ``count`` -- the same prompts at every validation."""
    import numpy as np

    samples = sorted(zip(inputs, outputs, scores, strict=True), key=lambda sample: sample[0])
    np.random.RandomState(42).shuffle(samples)
    return [tuple(sample) for sample in samples[:count]]


def _dump_default(value: Any) -> Any:
    """json.dumps' fallback: numpy / torch values as Python ones, anything else as ``str`` (verl's default=str)."""
    tolist = getattr(value, "tolist", None)
    return tolist() if callable(tolist) else str(value)


def dump_generations(dump_dir: str, step: int, inputs: list[str], outputs: list[str], gts: list[Any],
                     scores: list[float], reward_extra_infos: Mapping[str, list] | None = None) -> str:
    """``<dump_dir>/<step>.jsonl`` exactly as verl's ``_dump_generations`` writes it (``trainer.rollout_data_dir`` /
    ``validation_data_dir``): per sample ``input``, ``output``, ``gts``, ``score``, ``step`` and each reward extra
    info with one value per sample. Returns the file's path."""
    os.makedirs(dump_dir, exist_ok=True)
    path = os.path.join(dump_dir, f"{step}.jsonl")
    n = len(inputs)
    columns: dict[str, list] = {"input": list(inputs), "output": list(outputs), "gts": list(gts),
                                "score": list(scores), "step": [step] * n}
    for key, values in (reward_extra_infos or {}).items():
        values = values.tolist() if hasattr(values, "tolist") else list(values)
        if len(values) == n:
            columns[key] = values
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            f.write(json.dumps({k: v[i] for k, v in columns.items()}, ensure_ascii=False, default=_dump_default)
                    + "\n")
    print(f"Dumped generations to {path}")
    return path
