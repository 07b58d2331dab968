"""``tool_agent``: verl's ReAct loop. The model generates; the hermes calls in its turn (the first
``max_parallel_calls`` of them) run concurrently; their responses, truncated to ``max_tool_response_length``
characters on ``tool_response_truncate_side``, enter the context as tool messages; the model generates again --
until a turn has no call, ``max_assistant_turns`` / ``max_user_turns`` is reached or the response reaches
``response_length`` tokens. Model tokens carry ``response_mask`` 1 and their log-probs, tool tokens 0.

A call that cannot be parsed, names an unknown tool, has arguments that are not a JSON object, or whose tool raises
is answered with a tool message saying so (and counted), never an exception out of the rollout.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any, Optional

from verl.tools.function_tool import FunctionTool, normalize_function_tool_return
from verl.tools.schemas import ToolResponse

from .agent_loop import AgentLoopBase, AgentLoopMetrics, AgentLoopOutput, register, simple_timer, turn_seed
from .chat_tokens import ChatTokens
from .tool_parser import FunctionCall, ToolParser

logger = logging.getLogger(__name__)


class AgentData:
    """One trajectory's state (verl's name); tools receive it as ``agent_data`` and may keep session data in
    ``extra_fields``."""

    def __init__(self, messages: list[dict[str, Any]], tools_kwargs: dict[str, Any]) -> None:
        self.messages = messages
        self.tools_kwargs = tools_kwargs
        self.metrics = AgentLoopMetrics()
        self.prompt_ids: list[int] = []  # the whole context: prompt, then every turn
        self.response_mask: list[int] = []
        self.response_logprobs: list[float] = []
        self.turn_scores: list[float] = []
        self.tool_rewards: list[float] = []
        self.user_turns = 0
        self.assistant_turns = 0
        self.tool_calls: list[FunctionCall] = []
        self.last_generated_id: Optional[int] = None  # the end of the last assistant turn (its end-of-turn token?)
        self.extra_fields: dict[str, Any] = {}
        self.num_tool_calls = 0  # calls executed
        self.num_tool_call_errors = 0  # malformed / unknown / failed calls (answered with an error)
        self.num_dropped_tool_calls = 0  # calls past max_parallel_calls in a turn


def truncate_tool_response(text: str, max_length: int, side: str) -> str:
    """verl's truncation: ``max_length`` characters kept, the cut marked with ``(truncated)``."""
    if len(text) <= max_length:
        return text
    if side == "left":
        return "(truncated)..." + text[-max_length:]
    if side == "right":
        return text[:max_length] + "...(truncated)"
    half = max_length // 2
    return text[:half] + "...(truncated)..." + text[-half:]


@register("tool_agent")
class ToolAgentLoop(AgentLoopBase):
    def __init__(self, *args: Any, tools: Optional[list[Any]] = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        multi_turn = self.rollout_config.multi_turn
        self.max_user_turns = multi_turn.max_user_turns
        self.max_assistant_turns = multi_turn.max_assistant_turns
        self.max_parallel_calls = multi_turn.max_parallel_calls
        self.max_tool_response_length = multi_turn.max_tool_response_length
        self.tool_response_truncate_side = multi_turn.tool_response_truncate_side
        tool_list = getattr(tools, "tools", tools) or []
        self.tools = {tool.name: tool for tool in tool_list}
        if len(self.tools) != len(tool_list):
            raise ValueError(f"tool_agent: tool names must be unique, got {[t.name for t in tool_list]}")
        self.tool_schemas = [t.tool_schema.model_dump(exclude_unset=True, exclude_none=True) for t in tool_list]
        self.tool_parser = ToolParser.get_tool_parser(multi_turn.format, self.tokenizer)
        self.chat = ChatTokens(self.tokenizer, self.apply_chat_template_kwargs)
        self.prompt_length = self.rollout_config.prompt_length
        self.response_length = self.rollout_config.response_length

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        data = AgentData(list(kwargs["raw_prompt"]), dict(kwargs.get("tools_kwargs") or {}))
        tools, schemas = self._active_tools(kwargs.get("extra_info") or {})
        data.prompt_ids = self.chat.initial_prompt_ids(data.messages, schemas, self.prompt_length)
        prompt_len = len(data.prompt_ids)
        while True:
            calls = await self._generate(data, sampling_params, tools)
            if calls is None:
                break
            if not await self._process_tools(data, calls, tools, schemas):
                break
        response_ids = data.prompt_ids[prompt_len:]
        output = AgentLoopOutput(
            prompt_ids=data.prompt_ids[:prompt_len],
            response_ids=response_ids[:self.response_length],
            response_mask=data.response_mask[:self.response_length],
            response_logprobs=data.response_logprobs[:self.response_length],
            num_turns=data.user_turns + data.assistant_turns + 1,
            metrics=data.metrics,
            extra_fields=data.extra_fields,
        )
        output.extra_fields.update({
            "turn_scores": data.turn_scores, "tool_rewards": data.tool_rewards,
            "num_assistant_turns": data.assistant_turns, "num_user_turns": data.user_turns,
            "tool_call_counts": data.num_tool_calls, "num_tool_call_errors": data.num_tool_call_errors,
            "num_dropped_tool_calls": data.num_dropped_tool_calls})
        return output

    def _active_tools(self, extra_info: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """verl's per-sample ``extra_info.tool_selection``: only the named tools are offered."""
        selection = extra_info.get("tool_selection") if isinstance(extra_info, dict) else None
        if not selection or not self.tools:
            return self.tools, self.tool_schemas
        chosen = {name: self.tools[name] for name in selection if name in self.tools}
        return chosen, [t.tool_schema.model_dump(exclude_unset=True, exclude_none=True) for t in chosen.values()]

    async def _generate(self, data: AgentData, sampling_params: dict[str, Any],
                        tools: dict[str, Any]) -> Optional[list[FunctionCall]]:
        """One assistant turn; the calls to run next, or None when the rollout ends."""
        budget = self.response_length - len(data.response_mask)
        params = {**sampling_params, "max_tokens": min(int(sampling_params.get("max_tokens", budget)), budget)}
        if params.get("seed") is not None:
            params["seed"] = turn_seed(int(params["seed"]), data.assistant_turns)
        if self.tool_parser.stop_token_ids:
            stops = set(params.get("stop_token_ids") or []) | set(self.tool_parser.stop_token_ids)
            params["stop_token_ids"] = sorted(stops)
        with simple_timer("generate_sequences", data.metrics):
            output = await self.server_manager.generate(prompt_ids=data.prompt_ids, sampling_params=params)
        data.assistant_turns += 1
        ids = list(output.token_ids)
        data.prompt_ids += ids
        data.response_mask += [1] * len(ids)
        data.response_logprobs += list(output.log_probs) if output.log_probs else [0.0] * len(ids)
        data.last_generated_id = ids[-1] if ids else None
        if len(data.response_mask) >= self.response_length:
            return None
        if self.max_assistant_turns and data.assistant_turns >= self.max_assistant_turns:
            return None
        if self.max_user_turns and data.user_turns >= self.max_user_turns:
            return None
        content, calls = await self.tool_parser.extract_tool_calls(ids, list(tools.values()))
        data.tool_calls = calls
        data.messages.append(self._assistant_message(content, calls[:self.max_parallel_calls]))
        return calls or None

    def _assistant_message(self, content: str, calls: list[FunctionCall]) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": content or ""}
        if calls:
            message["tool_calls"] = [{"type": "function", "function": {"name": c.name, "arguments": c.arguments},
                                      **({"id": c.tool_call_id} if c.tool_call_id else {})} for c in calls]
        return message

    async def _process_tools(self, data: AgentData, calls: list[FunctionCall], tools: dict[str, Any],
                             schemas: list[dict[str, Any]]) -> bool:
        """Runs the turn's calls concurrently and appends their tool messages; False when the rollout ends."""
        run_now = calls[:self.max_parallel_calls]
        data.num_dropped_tool_calls += len(calls) - len(run_now)
        with simple_timer("tool_calls", data.metrics):
            results = await asyncio.gather(*(self._call_tool(call, tools, data) for call in run_now))
        messages = []
        for call, (response, reward) in zip(run_now, results):
            if response.image or response.video:
                raise ValueError(f"tool '{call.name}' returned images / videos; verl-cpp's agent loop is text-only")
            message = {"role": "tool", "content": response.text or ""}
            if call.tool_call_id is not None:
                message["tool_call_id"] = call.tool_call_id
            messages.append(message)
            if reward is not None:
                data.tool_rewards.append(reward)
        new_ids = self.chat.appended_message_ids(messages, schemas, data.last_generated_id)
        if len(data.response_mask) + len(new_ids) >= self.response_length:
            return False  # verl ends here, without the tool tokens that would not fit
        data.messages.extend(messages)
        data.prompt_ids += new_ids
        data.response_mask += [0] * len(new_ids)
        data.response_logprobs += [0.0] * len(new_ids)
        data.user_turns += 1
        return True

    async def _call_tool(self, call: FunctionCall, tools: dict[str, Any],
                         data: AgentData) -> tuple[ToolResponse, Optional[float]]:
        if call.error is not None:
            data.num_tool_call_errors += 1
            return ToolResponse(text=f"Error: {call.error}"), 0.0
        if call.name not in tools:
            data.num_tool_call_errors += 1
            return ToolResponse(text=f"Error: unknown function '{call.name}'. Available tools: {list(tools)}"), 0.0
        try:
            arguments = json.loads(call.arguments)
        except json.JSONDecodeError as e:
            data.num_tool_call_errors += 1
            return ToolResponse(text=f"Error: invalid JSON in arguments for '{call.name}': {e}"), 0.0
        tool = tools[call.name]
        instance_id = None
        try:
            if isinstance(tool, FunctionTool):
                response, reward, _ = normalize_function_tool_return(await tool.call(arguments))
            else:
                create_kwargs = (data.tools_kwargs.get(call.name) or {}).get("create_kwargs", {})
                instance_id, _ = await tool.create(create_kwargs=create_kwargs)
                response, reward, _ = await tool.execute(instance_id, arguments, agent_data=data)
                if not isinstance(response, ToolResponse):
                    response = normalize_function_tool_return(response)[0]
        except Exception as e:  # the tool's failure is the model's observation, not the rollout's crash
            logger.warning("tool %r failed: %s", call.name, e)
            data.num_tool_call_errors += 1
            return ToolResponse(text=f"Error executing tool '{call.name}': {type(e).__name__}: {e}"), 0.0
        finally:
            if instance_id is not None:
                try:
                    await tool.release(instance_id)
                except Exception as e:  # a failed clean-up is the tool's problem, not the batch's
                    logger.warning("tool %r failed to release instance %s: %s", call.name, instance_id, e)
        data.num_tool_calls += 1
        text = truncate_tool_response(response.text or "", self.max_tool_response_length,
                                      self.tool_response_truncate_side)
        return ToolResponse(text=text, image=response.image, video=response.video), reward
