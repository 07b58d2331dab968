"""The rollout settings an agent loop reads, with verl's names and defaults (``actor_rollout_ref.rollout.*``):
``prompt_length``, ``response_length``, ``multi_turn.*`` and ``agent.*``. ``from_rollout_config`` takes verl's
rollout section (a dict or an OmegaConf ``DictConfig``) and reads exactly these keys."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Mapping, Optional

_TRUNCATE_SIDES = ("left", "right", "middle")


@dataclass
class MultiTurnConfig:
    enable: bool = False
    max_assistant_turns: Optional[int] = None  # None: no limit (the response length still bounds a rollout)
    max_user_turns: Optional[int] = None
    max_parallel_calls: int = 1  # calls executed per assistant turn (later ones are dropped, as in verl)
    max_tool_response_length: int = 256  # characters of a tool's text
    tool_response_truncate_side: str = "middle"
    tool_config_path: Optional[str] = None
    function_tool_path: Optional[str] = None
    format: str = "hermes"

    def __post_init__(self) -> None:
        for name in ("max_assistant_turns", "max_user_turns"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 0):
                raise ValueError(f"rollout.multi_turn.{name} must be null or an int >= 0, got {value!r}")
        if not isinstance(self.max_parallel_calls, int) or self.max_parallel_calls < 1:
            raise ValueError("rollout.multi_turn.max_parallel_calls must be an int >= 1, got "
                             f"{self.max_parallel_calls!r}")
        if not isinstance(self.max_tool_response_length, int) or self.max_tool_response_length < 1:
            raise ValueError("rollout.multi_turn.max_tool_response_length must be an int >= 1, got "
                             f"{self.max_tool_response_length!r}")
        if self.tool_response_truncate_side not in _TRUNCATE_SIDES:
            raise ValueError(f"rollout.multi_turn.tool_response_truncate_side must be one of {_TRUNCATE_SIDES}, "
                             f"got {self.tool_response_truncate_side!r}")


@dataclass
class AgentConfig:
    default_agent_loop: str = "single_turn_agent"  # for samples without an agent_name
    agent_loop_config_path: Optional[str] = None  # YAML list of {name, _target_, **kwargs}: custom agent loops


@dataclass
class AgentLoopConfig:
    prompt_length: int = 512
    response_length: int = 512  # all model + tool tokens of a rollout after the prompt
    multi_turn: MultiTurnConfig = field(default_factory=MultiTurnConfig)
    agent: AgentConfig = field(default_factory=AgentConfig)

    def __post_init__(self) -> None:
        for name in ("prompt_length", "response_length"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(f"rollout.{name} must be an int >= 1, got {getattr(self, name)!r}")
        if isinstance(self.multi_turn, Mapping):
            self.multi_turn = _build(MultiTurnConfig, self.multi_turn, "rollout.multi_turn")
        if isinstance(self.agent, Mapping):
            self.agent = _build(AgentConfig, self.agent, "rollout.agent")

    @classmethod
    def from_rollout_config(cls, rollout: Any) -> AgentLoopConfig:
        """From verl's ``actor_rollout_ref.rollout`` section (other keys of that section are not read here)."""
        section = _plain(rollout)
        if not isinstance(section, Mapping):
            raise TypeError(f"rollout config must be a mapping, got {type(rollout).__name__}")
        kwargs: dict[str, Any] = {k: section[k] for k in ("prompt_length", "response_length") if k in section}
        if section.get("multi_turn") is not None:
            kwargs["multi_turn"] = _build(MultiTurnConfig, section["multi_turn"], "rollout.multi_turn")
        if section.get("agent") is not None:
            kwargs["agent"] = _build(AgentConfig, section["agent"], "rollout.agent")
        return cls(**kwargs)


# verl's rollout.yaml keys of these sections that this loop does not implement: accepted only at the value whose
# behaviour it has (verl's default), refused otherwise, so no setting is silently dropped. ``num_workers`` (verl's
# Ray worker count) has no effect: every sample runs as an asyncio task in this process.
_AT_DEFAULT_ONLY: dict[str, tuple[Any, ...]] = {
    "_target_": (), "num_workers": (), "use_inference_chat_template": (False,),
    "tokenization_sanity_check_mode": ("strict", "disable", "ignore_strippable"),  # ids are never re-tokenized
    "num_repeat_rollouts": (None,), "custom_async_server": (None, {"path": None, "name": None}),
}


def _build(cls: type, values: Any, where: str) -> Any:
    values = _plain(values)
    if not isinstance(values, Mapping):
        raise TypeError(f"{where} must be a mapping, got {type(values).__name__}")
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(values) - known - set(_AT_DEFAULT_ONLY))
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {unknown}; known: {sorted(known)}")
    for key, allowed in _AT_DEFAULT_ONLY.items():
        value = values.get(key)
        if isinstance(value, Mapping):
            value = {k: v for k, v in value.items() if k != "_target_"}
        if key in values and allowed and value not in allowed:
            raise ValueError(f"{where}.{key}={values[key]!r} is not supported by verl-cpp's agent loop "
                             f"(supported: {list(allowed)})")
    return cls(**{k: v for k, v in values.items() if k in known})


def _plain(value: Any) -> Any:
    try:
        from omegaconf import DictConfig, OmegaConf
    except ImportError:  # pragma: no cover - omegaconf is a dependency
        return value
    if isinstance(value, DictConfig):
        return OmegaConf.to_container(value, resolve=True)
    return value
