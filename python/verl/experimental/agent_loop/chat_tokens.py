"""Token ids of a multi-turn conversation built turn by turn, as the chat template renders it.

The model's own tokens are never re-tokenized (re-rendering an assistant turn through the template can change them:
Qwen3 re-formats ``<tool_call>`` JSON and drops ``<think>`` blocks). So the ids of turn ``k + 1``'s prompt are
turn ``k``'s prompt ids + the ids the model generated + the ids of the new tool messages, where the last are the
template's rendering of those messages after an assistant turn: the text that follows a placeholder assistant
content when ``[user, assistant(placeholder), *tool messages]`` is rendered with the generation prompt. That text
starts with the assistant turn's closing (Qwen: ``<|im_end|>\\n``); the part of it the model already generated
(its end-of-turn token) is left out.
"""

from __future__ import annotations

from typing import Any, Optional

_PLACEHOLDER = "\u2063verl-agent-loop-assistant-turn\u2063"


class ChatTokens:
    def __init__(self, tokenizer: Any, chat_template_kwargs: Optional[dict[str, Any]] = None) -> None:
        self.tokenizer = tokenizer
        self.chat_template_kwargs = dict(chat_template_kwargs or {})

    def initial_prompt_ids(self, messages: list[dict[str, Any]], tools: Optional[list[dict[str, Any]]],
                           max_length: Optional[int] = None) -> list[int]:
        """The first prompt: the messages (and the tools block) with the generation prompt. Longer than
        ``max_length`` (rollout.prompt_length) is a ValueError: cutting it would drop the system prompt and tools."""
        if not messages:
            raise ValueError("agent loop: raw_prompt has no messages")
        ids = list(self.tokenizer.apply_chat_template(messages, tools=tools or None, add_generation_prompt=True,
                                                      tokenize=True, **self.chat_template_kwargs))
        if max_length is not None and len(ids) > max_length:
            raise ValueError(f"agent loop: the prompt{' with its tools' if tools else ''} is {len(ids)} tokens, more "
                             f"than rollout.prompt_length={max_length} (data.max_prompt_length); shorten it, raise "
                             "the limit, or drop such rows with data.filter_overlong_prompts=true (with "
                             "data.tool_config_path for prompts that carry tools)")
        return ids

    def appended_message_ids(self, new_messages: list[dict[str, Any]], tools: Optional[list[dict[str, Any]]],
                             last_generated_id: Optional[int]) -> list[int]:
        """The ids that follow an assistant turn ending in ``last_generated_id``: the rest of its closing, the new
        (tool / user) messages and the next generation prompt."""
        text = self.appended_message_text(new_messages, tools)
        eos_text = self._eos_text(last_generated_id)
        if eos_text and text.startswith(eos_text):
            text = text[len(eos_text):]
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def appended_message_text(self, new_messages: list[dict[str, Any]], tools: Optional[list[dict[str, Any]]]) -> str:
        conversation = [{"role": "user", "content": "?"}, {"role": "assistant", "content": _PLACEHOLDER},
                        *new_messages]
        rendered = self.tokenizer.apply_chat_template(conversation, tools=tools or None, add_generation_prompt=True,
                                                      tokenize=False, **self.chat_template_kwargs)
        at = rendered.find(_PLACEHOLDER)
        if at < 0 or rendered.find(_PLACEHOLDER, at + 1) >= 0:
            raise ValueError("agent loop: the chat template does not render an assistant message's content once, "
                             "so tool messages cannot be appended turn by turn")
        return rendered[at + len(_PLACEHOLDER):]

    def _eos_text(self, token_id: Optional[int]) -> str:
        """The text of ``token_id`` when it is a special token ending the model's turn (it is in the closing)."""
        if token_id is None:
            return ""
        text = self.tokenizer.decode([token_id], skip_special_tokens=False)
        special = self.tokenizer.decode([token_id], skip_special_tokens=True)
        return text if text and not special else ""
