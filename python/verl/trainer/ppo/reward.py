"""Reward wiring from the config tree (verl's ``verl.trainer.ppo.reward``).

- ``get_custom_reward_fn(config)``: the function ``custom_reward_function.name`` from the Python file
  ``custom_reward_function.path`` (``reward.custom_reward_function`` in verl 0.9's layout, or the top-level
  legacy section), with ``reward_kwargs`` bound; None when no path is set.
- ``load_reward_manager(config, tokenizer, num_examine, **reward_kwargs)``: the configured manager
  (``reward_model.reward_manager`` when set, else ``reward.reward_manager.name``; ``source: importlib`` loads
  the class from ``reward.reward_manager.module.path``) with the custom function or ``default_compute_score``.
- ``compute_reward(data, reward_fn)``: ``(reward_tensor, reward_extra_infos_dict)``.
- ``reward_max_concurrent(config)``: ``reward.max_concurrent`` (verl 0.9.1's name, added with
  ``+reward.max_concurrent=N``): how many samples an ``async def`` reward function scores at once.
- ``sandbox_fusion_kwargs(config)``: ``reward.sandbox_fusion.{url, max_concurrent, memory_limit_mb}`` (or the
  legacy top-level ``sandbox_fusion.*``) as the keyword arguments ``default_compute_score`` takes; with a URL,
  the code data sources' test cases run on that Sandbox Fusion server, at most ``max_concurrent`` requests at
  once across the whole job (one semaphore), instead of in the local sandbox.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import sys
import threading
from typing import Any

import torch

from ...errors import ConfigError
from ...protocol import DataProto
from ...utils.reward_score import get_default_compute_score
from ...workers.reward_manager import get_reward_manager_cls
from ..reward_fn import RewardFunction, check_max_concurrent

__all__ = ["get_custom_reward_fn", "get_custom_reward_fn_path", "load_reward_manager", "compute_reward",
           "load_extern_object", "reward_max_concurrent", "sandbox_fusion_kwargs"]

_MISSING = object()


def _select(config: Any, key: str, default: Any = None) -> Any:
    """``config[a][b][c]`` for ``key="a.b.c"`` over a verl.Config or nested dicts; ``default`` when absent/None."""
    node = config
    for part in key.split("."):
        if node is None:
            return default
        if isinstance(node, dict):
            node = node.get(part, _MISSING)
        elif hasattr(node, "get"):
            node = node.get(part, _MISSING)
        else:
            node = getattr(node, part, _MISSING)
        if node is _MISSING:
            return default
    return default if node is None else node


def _plain(value: Any) -> Any:
    return value.to_dict() if hasattr(value, "to_dict") else value


def load_extern_object(module_path: str, object_name: str) -> Any:
    """``object_name`` from the Python file at ``module_path`` (verl's ``load_extern_object`` for files).

    Raises ``verl.ConfigError`` naming the path when the file is missing, fails to import, or lacks the name.
    """
    path = os.path.abspath(os.path.expanduser(module_path))
    if not os.path.isfile(path):
        raise ConfigError(f"custom reward module not found: '{module_path}' ({path})")
    module_name = f"verl_custom_module_{abs(hash(path))}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"cannot import '{module_path}' as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses and pickling look the module up by name
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        del sys.modules[module_name]
        raise ConfigError(f"error while importing '{module_path}': {type(e).__name__}: {e}") from e
    if not hasattr(module, object_name):
        names = sorted(n for n in vars(module) if not n.startswith("_"))
        raise ConfigError(f"'{module_path}' has no attribute '{object_name}' (it defines {names})")
    return getattr(module, object_name)


def _custom_reward_section(config: Any) -> Any:
    # verl 0.9 keeps it under reward.*; older configs (and this tree) also have a top-level section.
    if _select(config, "reward.custom_reward_function.path"):
        return _select(config, "reward.custom_reward_function")
    if _select(config, "custom_reward_function.path"):
        return _select(config, "custom_reward_function")
    return None


def get_custom_reward_fn_path(config: Any) -> str | None:
    """``custom_reward_function.path`` from either layout, or None when no custom function is configured."""
    section = _custom_reward_section(config)
    return None if section is None else _select(section, "path")


def get_custom_reward_fn(config: Any) -> RewardFunction | None:
    """The configured custom reward function wrapped as a ``RewardFunction`` (callable as verl calls it, with
    ``reward_kwargs`` merged over the call's kwargs), or None when no ``path`` is configured."""
    section = _custom_reward_section(config)
    return None if section is None else _function_of(section)


def get_custom_cost_fn(config: Any) -> RewardFunction | None:
    """Safe-RLHF's cost function from ``algorithm.safe_rlhf.cost_function.{path,name}`` (the custom reward
    function's form), or None when no ``path`` is configured."""
    section = _select(config, "algorithm.safe_rlhf.cost_function")
    return None if section is None or not _select(section, "path") else _function_of(section)


def _function_of(section: Any) -> RewardFunction:
    raw_fn = load_extern_object(_select(section, "path"), _select(section, "name", "compute_score"))
    reward_kwargs = dict(_plain(_select(section, "reward_kwargs", {})) or {})
    return RewardFunction(raw_fn, bound_kwargs=reward_kwargs)


def reward_max_concurrent(config: Any) -> int:
    """``reward.max_concurrent`` as an int >= 1 (``DEFAULT_MAX_CONCURRENT`` when absent); ConfigError naming the
    key for anything else."""
    return check_max_concurrent(_select(config, "reward.max_concurrent"))


def _sandbox_setting(config: Any, leaf: str, default: Any = None) -> Any:
    # verl 0.9.1 moves a legacy top-level sandbox_fusion section that sets anything over reward.sandbox_fusion
    legacy = _select(config, f"sandbox_fusion.{leaf}")
    return legacy if legacy is not None else _select(config, f"reward.sandbox_fusion.{leaf}", default)


def sandbox_fusion_kwargs(config: Any) -> dict[str, Any]:
    """``{sandbox_fusion_url, concurrent_semaphore, memory_limit_mb}`` for ``default_compute_score`` when
    ``reward.sandbox_fusion.url`` is set, else ``{}``. ConfigError for a URL that is not http(s), a
    ``max_concurrent`` below 1 or a ``memory_limit_mb`` that is not a positive integer, naming the key."""
    url = _sandbox_setting(config, "url")
    if not url:
        return {}
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise ConfigError(f"reward.sandbox_fusion.url must be the http(s) URL of a Sandbox Fusion /run_code "
                          f"endpoint, got {url!r}")
    max_concurrent = check_max_concurrent(_sandbox_setting(config, "max_concurrent", 64),
                                          "reward.sandbox_fusion.max_concurrent")
    memory_limit_mb = _sandbox_setting(config, "memory_limit_mb", 1024)
    if isinstance(memory_limit_mb, bool) or not isinstance(memory_limit_mb, int) or memory_limit_mb < 1:
        raise ConfigError(f"reward.sandbox_fusion.memory_limit_mb must be an integer >= 1, got {memory_limit_mb!r}")
    return {"sandbox_fusion_url": url, "concurrent_semaphore": threading.Semaphore(max_concurrent),
            "memory_limit_mb": memory_limit_mb}


def _manager_name(config: Any) -> str:
    return _select(config, "reward_model.reward_manager") or _select(config, "reward.reward_manager.name", "naive")


def _manager_cls(config: Any) -> type:
    name = _manager_name(config)
    # verl 0.9.1 migrates the legacy reward_model.reward_loop_source / reward_loop_module_path onto these
    source = _select(config, "reward_model.reward_loop_source") or _select(config, "reward.reward_manager.source",
                                                                            "register")
    if source == "register":
        return get_reward_manager_cls(name)
    if source == "importlib":
        path = (_select(config, "reward_model.reward_loop_module_path")
                if _select(config, "reward_model.reward_loop_source") else
                _select(config, "reward.reward_manager.module.path"))
        if not path:
            raise ConfigError("reward.reward_manager.module.path is required when reward.reward_manager.source is "
                              "'importlib'")
        return load_extern_object(path, name)
    raise ConfigError(f"Unknown reward manager source: {source} (expected 'register' or 'importlib')")


def load_reward_manager(config: Any, tokenizer: Any, num_examine: int = 0, **reward_kwargs: Any) -> Any:
    """The configured reward manager, scoring with the custom function or ``default_compute_score``.

    ``reward_kwargs`` go to the manager's constructor. For ``dapo`` (as verl's DAPO recipe passes them)
    ``max_resp_len`` defaults to ``data.max_response_length`` and ``overlong_buffer_cfg`` to
    ``reward.reward_kwargs.overlong_buffer_cfg`` or ``reward_model.overlong_buffer`` when configured.
    """
    cls = _manager_cls(config)
    compute_score = get_custom_reward_fn(config)
    if compute_score is None:
        # as verl: the sandbox settings go to the default scorer only (a custom function gets none of them)
        sandbox = sandbox_fusion_kwargs(config)
        compute_score = get_default_compute_score(_manager_name(config))
        if sandbox:
            compute_score = RewardFunction(compute_score, bound_kwargs=sandbox)
        if _manager_name(config) == "batch":
            compute_score = None  # the batch manager's own batched default, which passes its kwargs on
            for key, value in sandbox.items():
                reward_kwargs.setdefault(key, value)

    configured = dict(_plain(_select(config, "reward.reward_kwargs", {})) or {})
    configured.update(dict(_plain(_select(config, "reward_model.reward_kwargs", {})) or {}))
    accepted = inspect.signature(cls.__init__).parameters
    if "overlong_buffer_cfg" in accepted:
        overlong = configured.pop("overlong_buffer_cfg", None) or _select(config, "reward_model.overlong_buffer")
        reward_kwargs.setdefault("overlong_buffer_cfg", _plain(overlong) if overlong is not None else None)
        reward_kwargs.setdefault("max_resp_len", configured.pop("max_resp_len", None)
                                 or _select(config, "data.max_response_length"))
    if "max_concurrent" in accepted:
        reward_kwargs.setdefault("max_concurrent", reward_max_concurrent(config))
    for key, value in configured.items():
        reward_kwargs.setdefault(key, value)

    return cls(tokenizer=tokenizer, num_examine=num_examine, compute_score=compute_score,
               reward_fn_key=_select(config, "data.reward_fn_key", "data_source"), **reward_kwargs)


def compute_reward(data: DataProto, reward_fn: Any) -> tuple[torch.Tensor, dict[str, Any]]:
    """``(reward_tensor (bs, response_length), reward_extra_infos_dict)`` from a reward manager.

    Unlike verl, a failing reward function is not retried without ``return_dict``: its ``RewardError`` (which
    names the sample) propagates. A manager that does not take ``return_dict`` is called plainly.
    """
    try:
        takes_return_dict = "return_dict" in inspect.signature(reward_fn).parameters
    except (TypeError, ValueError):
        takes_return_dict = False
    if not takes_return_dict:
        return reward_fn(data), {}
    result = reward_fn(data, return_dict=True)
    if isinstance(result, dict):
        return result["reward_tensor"], dict(result.get("reward_extra_info", {}))
    return result, {}
