"""``single_turn_agent``: the prompt's messages rendered with the generation prompt, one generation."""

from __future__ import annotations

from typing import Any

from .agent_loop import AgentLoopBase, AgentLoopMetrics, AgentLoopOutput, register, simple_timer
from .chat_tokens import ChatTokens


@register("single_turn_agent")
class SingleTurnAgentLoop(AgentLoopBase):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.pop("tools", None)  # a single turn never calls tools
        super().__init__(*args, **kwargs)
        self.chat = ChatTokens(self.tokenizer, self.apply_chat_template_kwargs)

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        prompt_ids = self.chat.initial_prompt_ids(list(kwargs["raw_prompt"]), None, self.rollout_config.prompt_length)
        metrics = AgentLoopMetrics()
        response_length = self.rollout_config.response_length
        params = {**sampling_params, "max_tokens": min(int(sampling_params.get("max_tokens", response_length)),
                                                       response_length)}
        with simple_timer("generate_sequences", metrics):
            output = await self.server_manager.generate(prompt_ids=prompt_ids, sampling_params=params)
        ids = output.token_ids[:response_length]
        return AgentLoopOutput(prompt_ids=prompt_ids, response_ids=ids, response_mask=[1] * len(ids),
                               response_logprobs=list(output.log_probs[:len(ids)]) if output.log_probs else None,
                               num_turns=2, metrics=metrics, extra_fields={"turn_scores": [], "tool_rewards": []})
