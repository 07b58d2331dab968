"""verl's ``verl.utils.profiler`` as far as configs go: the ``profiler`` section of an actor, critic or rollout
config and its per-tool settings (verl-cpp has no profiler hooks of verl's; the C++ core has its own timers)."""

from .config import (
    NPUToolConfig,
    NsightToolConfig,
    PrecisionDebuggerToolConfig,
    ProfilerConfig,
    TorchMemoryToolConfig,
    TorchProfilerScheduleConfig,
    TorchProfilerToolConfig,
)

__all__ = ["NPUToolConfig", "NsightToolConfig", "PrecisionDebuggerToolConfig", "ProfilerConfig",
           "TorchMemoryToolConfig", "TorchProfilerScheduleConfig", "TorchProfilerToolConfig"]
