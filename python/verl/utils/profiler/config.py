"""The profiler config dataclasses of verl 0.9.1 (``verl.utils.profiler.config``): which tool profiles which
ranks, where the traces go, and each tool's own settings. Values are checked as verl checks them (AssertionError)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from omegaconf import MISSING

from ...base_config import BaseConfig

__all__ = ["NPUToolConfig", "NsightToolConfig", "PrecisionDebuggerToolConfig", "ProfilerConfig",
           "TorchMemoryToolConfig", "TorchProfilerScheduleConfig", "TorchProfilerToolConfig"]


@dataclass
class NsightToolConfig(BaseConfig):
    """Nsight Systems: ``discrete`` gives each profiled stage its own trace."""

    discrete: bool = False
    name: str = "nsight"


@dataclass
class TorchProfilerScheduleConfig(BaseConfig):
    """``torch.profiler.schedule`` over update mini-batches: skip_first, then (wait, warmup, active) x repeat;
    only in effect when ``active`` > 0."""

    skip_first: int = 0
    wait: int = 0
    warmup: int = 0
    active: int = 0
    repeat: int = 0
    name: str = "torch_schedule"

    def __post_init__(self) -> None:
        for name in ("skip_first", "wait", "warmup", "active", "repeat"):
            value = getattr(self, name)
            assert isinstance(value, int), f"{name} must be int, got {type(value)}"
            assert value >= 0, f"{name} must be >= 0, got {value}"

    @property
    def enabled(self) -> bool:
        return self.active > 0


@dataclass
class TorchProfilerToolConfig(BaseConfig):
    """torch.profiler: what to record (``contents`` from cuda, cpu, memory, shapes, stack), which generated tokens
    of a rollout to cover, and the schedule."""

    contents: list[str] = field(default_factory=list)
    discrete: bool = False
    profile_token_start: Optional[int] = None
    profile_token_end: Optional[int] = None
    schedule: Optional[TorchProfilerScheduleConfig] = None
    name: str = "torch"

    def __post_init__(self) -> None:
        assert isinstance(self.contents, list), f"Profiler contents must be of type list, got {type(self.contents)}"
        supported = ["cuda", "cpu", "memory", "shapes", "stack"]
        for content in self.contents:
            assert content in supported, f"Profiler contents only supports {supported}, but gets {content}"
        _check_token_window(self.profile_token_start, self.profile_token_end)


@dataclass
class TorchMemoryToolConfig(BaseConfig):
    """CUDA memory snapshots: allocation history length, stack depth, and how many steps a snapshot covers."""

    trace_alloc_max_entries: int = 100_000
    stack_depth: int = 32
    memory_snapshot_num_steps: int = 1
    name: str = "torch_memory"

    def __post_init__(self) -> None:
        for name in ("trace_alloc_max_entries", "stack_depth", "memory_snapshot_num_steps"):
            value = getattr(self, name)
            assert isinstance(value, int), f"{name} must be int, got {type(value)}"
            assert value > 0, f"{name} must be positive, got {value}"


@dataclass
class PrecisionDebuggerToolConfig(BaseConfig):
    """msprobe's precision debugger: its config file, the steps and stages to dump, and strict mode."""

    name: str = "precision_debugger"
    config_path: Optional[str] = None
    steps: Optional[list[int]] = None
    stages: Optional[list[str]] = None
    strict: bool = False

    def __post_init__(self) -> None:
        assert self.config_path is None or isinstance(self.config_path, str), "config_path must be str"
        assert self.steps is None or isinstance(self.steps, list), f"steps must be list[int], got {type(self.steps)}"
        assert self.stages is None or isinstance(self.stages, list), "stages must be list[str]"
        assert isinstance(self.strict, bool), f"strict must be bool, got {type(self.strict)}"


@dataclass
class NPUToolConfig(NsightToolConfig):
    """Ascend NPU profiler: contents (npu, cpu, memory, shapes, module, stack), level, offline analysis."""

    contents: list[str] = field(default_factory=list)
    level: str = "level0"
    analysis: bool = False
    profile_token_start: Optional[int] = None
    profile_token_end: Optional[int] = None
    name: str = "npu"

    def __post_init__(self) -> None:
        assert isinstance(self.contents, list), f"Profiler contents must be of type list, got {type(self.contents)}"
        assert isinstance(self.level, str), f"Profiler level must be of type str, got {type(self.level)}"
        assert isinstance(self.analysis, bool), f"Profiler analysis must be of type bool, got {type(self.analysis)}"
        supported = ["npu", "cpu", "memory", "shapes", "module", "stack"]
        for content in self.contents:
            assert content in supported, f"Profiler contents only supports {', '.join(supported)}, but gets {content}"
        levels = ["level_none", "level0", "level1", "level2"]
        assert self.level in levels, f"Profiler level only supports {', '.join(levels)}, but gets {self.level}"
        _check_token_window(self.profile_token_start, self.profile_token_end)


def _check_token_window(start: Optional[int], end: Optional[int]) -> None:
    for name, value in (("profile_token_start", start), ("profile_token_end", end)):
        if value is not None:
            assert isinstance(value, int), f"{name} must be int or None, got {type(value)}"
            assert value >= 0, f"{name} must be >= 0, got {value}"
    if start is not None and end is not None:
        assert end > start, f"profile_token_end ({end}) must be > profile_token_start ({start})"


@dataclass
class ProfilerConfig(BaseConfig):
    """``*.profiler``: the ``tool`` (nsys, npu, torch, torch_memory), whether this role profiles (``enable``) on
    ``all_ranks`` or on ``ranks``, where traces are saved, the tool's settings, and a command run when profiling
    finishes (on all ranks or on ``finish_hook_ranks``)."""

    tool: Optional[str] = MISSING
    enable: bool = False
    all_ranks: bool = False
    ranks: list[int] = field(default_factory=list)
    save_path: Optional[str] = MISSING
    tool_config: Any = MISSING
    global_tool_config: Optional[Any] = None
    relocate_results: bool = False
    finish_hook_cmd: Optional[str] = None
    finish_hook_all_ranks: bool = False
    finish_hook_ranks: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        assert isinstance(self.ranks, (set, list, tuple)), (
            f"Profiler ranks must be of type list, got {type(self.ranks)}")
        assert isinstance(self.finish_hook_ranks, (set, list, tuple)), (
            f"Profiler finish_hook_ranks must be of type list, got {type(self.finish_hook_ranks)}")
        assert self.finish_hook_cmd is None or isinstance(self.finish_hook_cmd, str), (
            f"finish_hook_cmd must be str or None, got {type(self.finish_hook_cmd)}")

    def _combine(self, other: "ProfilerConfig", both: bool) -> "ProfilerConfig":
        assert self.tool == other.tool, (
            f"Cannot combine ProfilerConfig with different tools: {self.tool} vs {other.tool}")

        def flag(a: bool, b: bool) -> bool:
            return (a and b) if both else (a or b)

        def ranks(a: list[int], b: list[int]) -> list[int]:
            a, b = set(a or []), set(b or [])
            return list(a & b if both else a | b)

        return ProfilerConfig(
            tool=self.tool, enable=flag(self.enable, other.enable), all_ranks=flag(self.all_ranks, other.all_ranks),
            ranks=ranks(self.ranks, other.ranks), save_path=self.save_path, tool_config=self.tool_config,
            global_tool_config=self.global_tool_config or other.global_tool_config,
            relocate_results=flag(self.relocate_results, other.relocate_results),
            finish_hook_cmd=self.finish_hook_cmd or other.finish_hook_cmd,
            finish_hook_all_ranks=flag(self.finish_hook_all_ranks, other.finish_hook_all_ranks),
            finish_hook_ranks=ranks(self.finish_hook_ranks, other.finish_hook_ranks))

    def union(self, other: "ProfilerConfig") -> "ProfilerConfig":
        """Profiles where either does: flags or-ed, rank lists joined; this config's save path and tool settings."""
        return self._combine(other, both=False)

    def intersect(self, other: "ProfilerConfig") -> "ProfilerConfig":
        """Profiles where both do: flags and-ed, rank lists intersected; this config's save path and tool settings."""
        return self._combine(other, both=True)
