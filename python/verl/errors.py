"""Exceptions raised by verl-cpp. libverl's C++ exceptions arrive as these classes (bindings/errors.cpp),
with the C++ message intact; each is also a built-in exception class, so ``except ValueError`` works."""

__all__ = [
    "VerlError",
    "ConfigError",
    "ConfigTypeError",
    "DataError",
    "DataContractError",
    "InvalidArgumentError",
    "VerlTypeError",
    "CheckpointError",
    "DistributedError",
    "RewardError",
]


class VerlError(RuntimeError):
    """Base class of every error verl-cpp raises on purpose (C++ ``verl::Error``)."""


class ConfigError(VerlError, ValueError):
    """Bad configuration: unknown key, out-of-range value, malformed YAML (C++ ``verl::ConfigError``)."""


class ConfigTypeError(ConfigError, TypeError):
    """A config value of the wrong type (C++ ``verl::ConfigTypeError``)."""


class DataError(VerlError, ValueError):
    """Data that does not fit the operation: batch sizes, keys, indices (C++ ``verl::DataError``)."""


class DataContractError(DataError, AssertionError):
    """A broken DataProto contract where verl asserts (unequal ``chunk``, conflicting ``union`` / ``concat``,
    batch sizes that disagree, more than one batch dimension): also an ``AssertionError``, so code written against
    verl keeps catching what it caught there."""


class InvalidArgumentError(VerlError, ValueError):
    """A bad argument to a function (C++ ``verl::InvalidArgument``)."""


class VerlTypeError(VerlError, TypeError):
    """A value of the wrong kind for the operation (C++ ``verl::TypeMismatch``)."""


class CheckpointError(VerlError):
    """A checkpoint or data file that cannot be read or written (C++ ``verl::CheckpointError``)."""


class DistributedError(VerlError):
    """A collective among the ranks of a multi-process job failed: a rank died or hung past
    ``actor_rollout_ref.nccl_timeout``, or the ranks disagreed on the call (C++ ``verl::DistributedError``)."""


class RewardError(VerlError):
    """A reward function failed or returned a non-finite / non-numeric reward. Raised in Python (reward
    managers, ``verl.trainer.reward_fn``); the message names the sample (index, data_source, start of the
    response) and the original exception is chained as ``__cause__``."""
