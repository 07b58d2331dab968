"""Tokenizers from Hugging Face ``tokenizer.json`` files, encoded in C++ (``verl._C.Tokenizer``).

>>> tok = verl.load_tokenizer("/models/Qwen3-0.6B")    # a directory, or the tokenizer.json itself
>>> ids = tok.encode("Hello, world!")                 # the same ids as HF tokenizers
>>> tok.decode(ids)
'Hello, world!'
>>> prompt = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

``apply_chat_template`` renders the model's Jinja chat template the way transformers does (same
sandboxed environment, globals and filters, special tokens and extra keyword arguments passed to
the template), so prompts match ``AutoTokenizer.apply_chat_template`` character for character.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any

import numpy as np

from . import _C
from .errors import InvalidArgumentError

__all__ = ["Tokenizer", "load_tokenizer"]


def load_tokenizer(path: str | os.PathLike) -> Tokenizer:
    """Loads a tokenizer from a directory holding ``tokenizer.json`` (and ``tokenizer_config.json``
    for the special tokens and chat template), from the ``tokenizer.json`` file itself, or from a GGUF
    model file (its tokenizer, converted once with the model: ``verl.models.gguf_checkpoint``).

    Raises ``verl.CheckpointError`` for a missing or malformed file and ``verl.InvalidArgumentError``
    for a tokenizer component this implementation does not support; both name the file and field.
    """
    from .models.gguf_checkpoint import local_checkpoint  # verl.models imports this module's neighbours

    path = local_checkpoint(path)
    tokenizer = Tokenizer(_C.Tokenizer.from_file(path))
    tokenizer.name_or_path = path if os.path.isdir(path) else os.path.dirname(path)
    return tokenizer


class Tokenizer:
    """A loaded tokenizer with the parts of transformers' tokenizer API that verl uses."""

    def __init__(self, cpp: _C.Tokenizer) -> None:
        self._cpp = cpp
        #: The directory it was loaded from (transformers' attribute name); trainers copy its files into checkpoints.
        self.name_or_path: str | None = None
        self._special = dict(cpp.special_tokens_map())
        self._special_ids: dict[str, int] = {}  # special tokens assigned in Python (pad_token = eos_token)
        self._templates = dict(cpp.chat_templates())

    # -- ids <-> text -----------------------------------------------------------------------
    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        try:
            return self._cpp.encode(text, add_special_tokens)
        except TypeError:
            _check_texts([text])
            raise

    def batch_encode(self, texts: Iterable[str], add_special_tokens: bool = True) -> list[list[int]]:
        """``encode`` of every text; large batches are spread over threads in C++."""
        texts = list(texts)
        try:
            return self._cpp.encode_batch(texts, add_special_tokens)
        except TypeError:
            _check_texts(texts)
            raise

    def decode(self, ids: Any, skip_special_tokens: bool = False) -> str:
        """Ids (a list, numpy array or tensor) -> text; invalid UTF-8 becomes U+FFFD as in HF."""
        return self._cpp.decode(_id_list(ids), skip_special_tokens)

    def batch_decode(self, sequences: Iterable[Any], skip_special_tokens: bool = False) -> list[str]:
        return self._cpp.decode_batch([_id_list(ids) for ids in sequences], skip_special_tokens)

    def convert_tokens_to_ids(self, tokens: str | Sequence[str]) -> int | None | list[int | None]:
        if isinstance(tokens, str):
            return self._cpp.token_to_id(tokens)
        return [self._cpp.token_to_id(t) for t in tokens]

    def convert_ids_to_tokens(self, ids: int | Sequence[int]) -> str | None | list[str | None]:
        if isinstance(ids, int):
            return self._cpp.id_to_token(ids)
        return [self._cpp.id_to_token(i) for i in _id_list(ids)]

    # -- vocabulary and special tokens --------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        """The model vocabulary without added tokens (transformers' ``vocab_size``)."""
        return self._cpp.vocab_size(False)

    def __len__(self) -> int:
        """The vocabulary with added tokens (transformers' ``len(tokenizer)``)."""
        return self._cpp.vocab_size(True)

    @property
    def special_tokens_map(self) -> dict[str, str]:
        return dict(self._special)

    @property
    def bos_token(self) -> str | None:
        return self._special.get("bos_token")

    @property
    def eos_token(self) -> str | None:
        return self._special.get("eos_token")

    @property
    def pad_token(self) -> str | None:
        return self._special.get("pad_token")

    @pad_token.setter
    def pad_token(self, token: str) -> None:
        self._set_special("pad_token", token)

    def _set_special(self, name: str, token: str) -> None:
        """Makes ``token`` (already in the vocabulary) this tokenizer's ``name`` (transformers' assignment
        ``tokenizer.pad_token = tokenizer.eos_token``); its id follows."""
        token_id = self.convert_tokens_to_ids(token) if isinstance(token, str) else None
        if token_id is None:
            raise InvalidArgumentError(f"{name} = {token!r}: not a token of this tokenizer's vocabulary")
        self._special[name] = token
        self._special_ids[name] = token_id

    @property
    def bos_token_id(self) -> int | None:
        return self._cpp.bos_token_id

    @property
    def eos_token_id(self) -> int | None:
        return self._cpp.eos_token_id

    @property
    def pad_token_id(self) -> int | None:
        return self._special_ids.get("pad_token", self._cpp.pad_token_id)

    @property
    def chat_template(self) -> str | dict[str, str] | None:
        """The template string, or {name: template} when the tokenizer ships several."""
        if not self._templates:
            return None
        if list(self._templates) == ["default"]:
            return self._templates["default"]
        return dict(self._templates)

    @chat_template.setter
    def chat_template(self, template: str | dict[str, str] | None) -> None:
        """Replaces the template(s), as assigning ``tokenizer.chat_template`` does in transformers (verl does it for
        ``actor_rollout_ref.model.custom_chat_template``)."""
        if template is None:
            self._templates = {}
        elif isinstance(template, str):
            self._templates = {"default": template}
        elif isinstance(template, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in template.items()):
            self._templates = dict(template)
        else:
            raise TypeError(f"chat_template must be a string or a dict of strings, got {type(template).__name__}")

    # -- chat templates -------------------------------------------------------------------------
    def apply_chat_template(
        self,
        conversation: Sequence[Mapping[str, Any]] | Sequence[Sequence[Mapping[str, Any]]],
        tokenize: bool = False,
        add_generation_prompt: bool = False,
        tools: Sequence[Mapping[str, Any]] | None = None,
        documents: Sequence[Mapping[str, Any]] | None = None,
        chat_template: str | None = None,
        continue_final_message: bool | str = False,
        return_dict: bool = False,
        **kwargs: Any,
    ) -> str | list[int] | list[str] | list[list[int]] | dict[str, Any]:
        """Renders messages with the chat template as transformers' ``apply_chat_template`` does.

        Extra keyword arguments reach the template (e.g. Qwen3's ``enable_thinking=False``), after
        the special tokens (``bos_token``, ``eos_token``, ...). ``tokenize=True`` returns the ids of
        the rendered text, encoded without adding special tokens (with ``return_dict=True``:
        ``{"input_ids": ..., "attention_mask": ...}``, transformers' default in v5). A list of
        conversations gives a list of results. ``tools`` are JSON-schema dicts.
        """
        template = self._get_chat_template(chat_template, tools)
        if isinstance(conversation, (list, tuple)) and len(conversation) == 0:
            raise ValueError("Cannot apply chat template to an empty conversation. Provide at least one message.")
        batched = isinstance(conversation, (list, tuple)) and isinstance(conversation[0], (list, tuple))
        conversations = conversation if batched else [conversation]
        if continue_final_message and add_generation_prompt:
            raise ValueError("continue_final_message and add_generation_prompt are not compatible.")
        conversations = [[{k: v for k, v in dict(m).items() if v is not None} for m in chat] for chat in conversations]
        if tools is not None:
            for tool in tools:
                if not isinstance(tool, Mapping):
                    raise ValueError("Tools should be JSON schemas (dicts); verl does not convert Python functions.")
            tools = [dict(t) for t in tools]
        if documents is not None:
            for document in documents:
                if not isinstance(document, Mapping):
                    raise TypeError("Documents should be a list of dicts with 'title' and 'text' keys!")
        template_kwargs = {**self._special, **kwargs}
        rendered = [
            _render(template, chat, _plain(tools), _plain(documents), add_generation_prompt, continue_final_message,
                    _plain(template_kwargs))
            for chat in conversations
        ]
        if tokenize:
            ids = self._cpp.encode_batch(rendered, False)
            if return_dict:
                masks = [[1] * len(row) for row in ids]
                return {"input_ids": ids, "attention_mask": masks} if batched else {"input_ids": ids[0],
                                                                                   "attention_mask": masks[0]}
            return ids if batched else ids[0]
        return rendered if batched else rendered[0]

    def _get_chat_template(self, chat_template: str | None, tools: Any) -> str:
        # transformers' get_chat_template: with several templates, a named one, the tool_use one
        # when tools are given, else the default; with one, the argument is template text.
        if chat_template is not None:
            several = list(self._templates) != ["default"]
            return self._templates.get(chat_template, chat_template) if several else chat_template
        if tools is not None and "tool_use" in self._templates:
            return self._templates["tool_use"]
        if "default" in self._templates:
            return self._templates["default"]
        if self._templates:
            raise ValueError(
                "This tokenizer has several chat templates and none is named 'default'; pass chat_template= one of "
                f"{sorted(self._templates)}."
            )
        raise ValueError("Cannot use apply_chat_template: the tokenizer has no chat template and none was passed.")

    def __repr__(self) -> str:
        return f"verl.Tokenizer(vocab_size={self.vocab_size}, len={len(self)}, eos_token={self.eos_token!r})"


def _check_texts(texts: list[Any]) -> None:
    # pybind11 reports a str it cannot convert only as "incompatible function arguments"; say why.
    for text in texts:
        if not isinstance(text, str):
            raise TypeError(f"expected str, got {type(text).__name__}")
        text.encode("utf-8")  # raises UnicodeEncodeError for lone surrogates


def _id_list(ids: Any) -> list[int]:
    if hasattr(ids, "tolist"):  # torch.Tensor, numpy.ndarray
        ids = ids.tolist()
    if isinstance(ids, int):
        return [ids]
    return [int(i) for i in ids]


# ---- Jinja rendering, as transformers.utils.chat_template_utils does it ---------------------------

_CONTINUE_TAG = "CONTINUE_FINAL_MESSAGE_TAG "
_REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")


@lru_cache
def _compile(template: str) -> Any:
    import jinja2
    from jinja2 import nodes
    from jinja2.ext import Extension
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class GenerationTag(Extension):
        # {% generation %}...{% endgeneration %} marks assistant text for transformers' masks;
        # here it only has to parse and render its body.
        tags = {"generation"}

        def parse(self, parser):
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            return nodes.CallBlock(self.call_method("_render_body"), [], [], body).set_lineno(lineno)

        def _render_body(self, caller):
            return caller()

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        # Unlike Jinja's own filter: no HTML escaping, and json.dumps' options.
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return datetime.now().strftime(format)

    class TemplateDict:
        def __call__(self, *args, **kwargs):
            return dict(*args, **kwargs)

        def fromkeys(self, *args, **kwargs):
            return dict.fromkeys(*args, **kwargs)

    class TemplateNamespace(jinja2.utils.Namespace):
        # Namespaces refuse underscore names, keeping templates away from Python internals.
        def __init__(*args, **kwargs):
            self, args = args[0], args[1:]
            attrs = dict(*args, **kwargs)
            for name in attrs:
                TemplateNamespace._check_name(name)
            jinja2.utils.Namespace.__init__(self, attrs)

        def __setitem__(self, name, value):
            TemplateNamespace._check_name(name)
            jinja2.utils.Namespace.__setitem__(self, name, value)

        @staticmethod
        def _check_name(name):
            if isinstance(name, str) and name.startswith("_"):
                raise jinja2.exceptions.SecurityError(
                    f"Chat templates cannot store underscore-prefixed attributes on a namespace, but got {name!r}."
                )

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[GenerationTag, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    env.globals["dict"] = TemplateDict()
    env.globals["namespace"] = TemplateNamespace
    return env.from_string(template)


def _plain(value: Any) -> Any:
    """What the template may see: plain JSON-like data (rich objects become "<TypeName>")."""
    if value is None or type(value) in (str, int, float, bool):
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, Mapping):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    if isinstance(value, np.generic):  # np.bool_(False) must not become a truthy placeholder
        return _plain(value.item())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if callable(getattr(value, "model_dump", None)):
        return _plain(value.model_dump())
    return f"<{type(value).__name__}>"


def _render(template: str, chat: list[dict], tools: Any, documents: Any, add_generation_prompt: bool,
            continue_final_message: bool | str, template_kwargs: dict) -> str:
    chat = _plain(chat)
    for message in chat:
        if not isinstance(message, dict):
            raise TypeError(f"Chat messages should be dicts, but got {message!r}.")
    # Reasoning given under an older name is also offered as reasoning_content (and thinking).
    aliased = []
    for message in chat:
        reasoning = next((message[k] for k in _REASONING_FIELDS if message.get(k) is not None), None)
        if reasoning is not None:
            message = {"thinking": reasoning, **message, "reasoning_content": reasoning}
        aliased.append(message)
    chat = aliased

    final_message = None
    if continue_final_message:
        field = continue_final_message if isinstance(continue_final_message, str) else "content"
        final_message = chat[-1].get(field)
        if final_message is None:
            raise ValueError(f'continue_final_message is set but the final message has no "{field}" to continue!')
        fields = [field]
        if field in _REASONING_FIELDS:
            fields = [f for f in _REASONING_FIELDS if chat[-1].get(f) == final_message]
        if not any(f in template for f in fields):
            raise ValueError(f'continue_final_message is set to "{field}" but this is not an accepted field in the '
                             "chat_template")
        if isinstance(final_message, (list, tuple)):
            for block in reversed(final_message):
                if "text" in block:
                    final_message = block["text"]
                    block["text"] = block["text"] + _CONTINUE_TAG
                    break
            else:
                raise ValueError("continue_final_message is set but we could not find any text to continue in the "
                                 "final message!")
        else:
            for f in fields:
                chat[-1][f] = chat[-1][f] + _CONTINUE_TAG

    rendered = _compile(template).render(messages=chat, tools=tools, documents=documents,
                                         add_generation_prompt=add_generation_prompt, **template_kwargs)
    if continue_final_message:
        if final_message.strip() not in rendered or _CONTINUE_TAG.strip() not in rendered:
            raise ValueError("continue_final_message is set but the final message does not appear in the chat after "
                             "applying the chat template.")
        at = rendered.rindex(_CONTINUE_TAG.strip())
        if rendered[at:at + len(_CONTINUE_TAG)] == _CONTINUE_TAG:
            rendered = rendered[:at]
        else:
            rendered = rendered[:at].rstrip()
    return rendered
