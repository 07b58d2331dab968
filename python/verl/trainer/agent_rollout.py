"""The PPO trainer's generation through verl's agent loops (``actor_rollout_ref.rollout.multi_turn.enable``).

verl 0.9.1 generates every batch through its agent loop manager: each row runs in the loop its ``agent_name``
column names (``rollout.agent.default_agent_loop`` otherwise) -- ``single_turn_agent``, ``tool_agent`` (hermes tool
calls; tool responses enter the context as tool messages with ``response_mask`` 0) or a loop a user registered
with ``@register`` / ``rollout.agent.agent_loop_config_path``. Here the C++ trainer calls ``AgentRollout`` (its
``rollout_fn``, verl/trainer/ppo_trainer.h) for every generation -- training, ReMax's greedy baseline,
validation -- with the rows (already repeated ``rollout.n`` times), the mode's sampling parameters and a seed. The
loops run as asyncio tasks over ``verl.rollout.LLM.generate_async`` on the trainer's own engine (the actor's
weights and KV cache, no copy): the engine batches every conversation's turns together while tools run.

Row i samples with seed + i (its later turns with ``turn_seed``), so a step does not depend on the order in which
tools finish, and a one-turn row samples exactly what the engine's one-shot generation samples.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import _C
from ..errors import ConfigError
from ..protocol import DataProto

__all__ = ["AgentRollout", "agent_rollout_enabled", "check_agent_rollout_config"]


def agent_rollout_enabled(config: Any) -> bool:
    return bool(config.get("actor_rollout_ref.rollout.multi_turn.enable"))


def _rollout_section(config: Any) -> dict[str, Any]:
    """The keys ``AgentLoopConfig`` reads, from verl's ``actor_rollout_ref.rollout`` section."""
    section = config.get("actor_rollout_ref.rollout")
    section = dict(section.to_dict() if hasattr(section, "to_dict") else section)
    return {"prompt_length": section["prompt_length"], "response_length": section["response_length"],
            "multi_turn": dict(section["multi_turn"]), "agent": dict(section["agent"])}


def _as_tool(tool: Any) -> Any:
    """A tool object as given (it has a ``tool_schema``), or a plain function as a ``FunctionTool`` (the one
    ``@function_tool`` registered for it, with its name and schema, when it was)."""
    from ..tools.function_tool import FUNCTION_TOOL_REGISTRY, FunctionTool

    if hasattr(tool, "tool_schema") and hasattr(tool, "name"):
        return tool
    if not callable(tool):
        raise TypeError(f"tools: {tool!r} is neither a tool object nor a function")
    registered = next((t for t in FUNCTION_TOOL_REGISTRY.values() if t.fn is tool), None)
    return registered if registered is not None else FunctionTool.from_function(tool)


class AgentRollout:
    """``rollout_fn`` of ``verl._C.trainer.PPOTrainer``: the rows' agent loops on ``engine``.

    Args:
        engine: the trainer's ``verl._C.rollout.Engine``.
        tokenizer: renders the conversations (its chat template, ``tools=``) and decodes tool calls.
        config: the job's ``verl.Config`` (``actor_rollout_ref.rollout.{prompt_length, response_length,
            multi_turn.*, agent.*}``).
        pad_token_id: the trainer's padding id (prompts and responses are padded as its own generation pads them).
        tools: tool objects or plain Python functions ``tool_agent`` may call, in addition to those of
            ``multi_turn.tool_config_path`` / ``function_tool_path``.
    """

    def __init__(self, engine: Any, tokenizer: Any, config: Any, pad_token_id: int,
                 tools: Sequence[Any] | None = None) -> None:
        from ..experimental.agent_loop import AgentLoopWorker, get_agent_loop_class
        from ..experimental.agent_loop.tool_parser import ToolParser
        from ..experimental.agent_loop.config import AgentLoopConfig
        from ..rollout import LLM
        from ..tools.tool_registry import load_all_tools

        try:
            loop_config = AgentLoopConfig.from_rollout_config(_rollout_section(config))
        except (ValueError, TypeError) as e:
            raise ConfigError(f"actor_rollout_ref.rollout: {e}") from e
        multi_turn = loop_config.multi_turn
        all_tools = load_all_tools(multi_turn.tool_config_path, multi_turn.function_tool_path)
        all_tools += [_as_tool(tool) for tool in tools or ()]
        names = [t.name for t in all_tools]
        if len(set(names)) != len(names):
            raise ConfigError(f"tools: two tools share a name ({sorted(names)}): the model calls tools by name")
        self.pad_token_id = int(pad_token_id)
        self.llm = LLM.from_engine(engine, tokenizer)
        self.worker = AgentLoopWorker(self.llm, tokenizer, loop_config, tools=all_tools)
        # Named things that are looked up on first use: a wrong name fails here, naming its key.
        for key, check in (("multi_turn.format", lambda: ToolParser.get_tool_parser(multi_turn.format, tokenizer)),
                           ("agent.default_agent_loop",
                            lambda: get_agent_loop_class(loop_config.agent.default_agent_loop))):
            try:
                check()
            except ValueError as e:
                raise ConfigError(f"actor_rollout_ref.rollout.{key}: {e}") from e

    @property
    def tools(self) -> list[Any]:
        return self.worker.tools

    def __call__(self, rows: Any, params: Any, seed: int) -> Any:
        batch = DataProto.from_cpp(rows) if isinstance(rows, _C.DataProto) else rows
        sampling = {"temperature": params.temperature, "top_p": params.top_p, "top_k": params.top_k,
                    "max_tokens": params.max_tokens, "ignore_eos": params.ignore_eos}
        out = self.worker.generate_sequences(batch, sampling, seeds=[seed + i for i in range(len(batch))],
                                             prompt_length=batch.batch["input_ids"].shape[1],
                                             pad_token_id=self.pad_token_id)
        return out.to_cpp()


def check_agent_rollout_config(config: Any, tools: Any) -> None:
    """ConfigError for tools without agent loops, or agent loops without the rows' messages."""
    enabled = agent_rollout_enabled(config)
    if enabled and not config.get("data.return_raw_chat"):
        raise ConfigError("actor_rollout_ref.rollout.multi_turn.enable=true needs data.return_raw_chat=true: agent "
                          "loops render each row's chat messages (raw_prompt) themselves")
    if not enabled:
        r = "actor_rollout_ref.rollout."
        agent_keys = [r + k for k in ("agent.agent_loop_config_path", "multi_turn.tool_config_path",
                                      "multi_turn.function_tool_path") if config.get(r + k)]
        if config.get(r + "agent.default_agent_loop") not in (None, "single_turn_agent"):
            agent_keys.append(r + "agent.default_agent_loop")
        if agent_keys:
            raise ConfigError(f"{', '.join(agent_keys)} configure agent loops, which generate only with "
                              "actor_rollout_ref.rollout.multi_turn.enable=true")
    if tools and not enabled:
        raise ConfigError("tools= were given but actor_rollout_ref.rollout.multi_turn.enable is false: tools are "
                          "called from agent loops; set it to true (and give rows agent_name='tool_agent' or set "
                          "actor_rollout_ref.rollout.agent.default_agent_loop=tool_agent)")
