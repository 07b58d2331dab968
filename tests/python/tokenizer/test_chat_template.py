"""apply_chat_template renders exactly what transformers' AutoTokenizer.apply_chat_template renders
for the Qwen3 fixture (transformers is the test-only reference), and the C++ ChatML renderer
matches it where Qwen3's template reduces to plain ChatML."""

from __future__ import annotations

import pytest

import verl
from verl import _C

transformers = pytest.importorskip("transformers")

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city, with <tags> & \"quotes\" and non-ASCII: 天气",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "City name"},
                           "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            "required": ["city"],
        },
    },
}
SEARCH_TOOL = {"type": "function", "function": {"name": "search", "description": "Web search",
                                                  "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}

CONVERSATIONS = {
    "user_only": [{"role": "user", "content": "What is 2 + 2?"}],
    "system_user": [{"role": "system", "content": "You are a helpful assistant."},
                    {"role": "user", "content": "Solve x^2 = 4. 请用中文回答。"}],
    "multi_turn": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi!"},
        {"role": "assistant", "content": "Hello! How can I help?"},
        {"role": "user", "content": "Tell me a joke about 🤖."},
    ],
    "assistant_last_with_think": [
        {"role": "user", "content": "2+3?"},
        {"role": "assistant", "content": "<think>\nadd them\n</think>\n\n5"},
    ],
    "reasoning_content": [
        {"role": "user", "content": "2+3?"},
        {"role": "assistant", "content": "5", "reasoning_content": "2 plus 3 is 5"},
        {"role": "user", "content": "and 4+4?"},
        {"role": "assistant", "content": "8", "reasoning": "4 plus 4"},
    ],
    "tool_calls": [
        {"role": "system", "content": "Use tools when needed."},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}}]},
        {"role": "tool", "content": "{\"temp\": 21}"},
        {"role": "tool", "content": "{\"humidity\": 40}"},
        {"role": "assistant", "content": "It is 21°C in Paris."},
        {"role": "user", "content": "<tool_response>x</tool_response>"},
    ],
    "none_values_dropped": [{"role": "user", "content": "hi", "name": None}],
}


@pytest.fixture(scope="module")
def pair(qwen3_dir):
    return verl.load_tokenizer(qwen3_dir), transformers.AutoTokenizer.from_pretrained(qwen3_dir)


@pytest.mark.parametrize("name", sorted(CONVERSATIONS))
@pytest.mark.parametrize("add_generation_prompt", [False, True])
@pytest.mark.parametrize("extra", [{}, {"enable_thinking": False}, {"tools": [WEATHER_TOOL, SEARCH_TOOL]}])
def test_rendered_text_matches_transformers(pair, name, add_generation_prompt, extra):
    ours, hf = pair
    messages = CONVERSATIONS[name]
    expected = hf.apply_chat_template(messages, tokenize=False, add_generation_prompt=add_generation_prompt, **extra)
    got = ours.apply_chat_template(messages, tokenize=False, add_generation_prompt=add_generation_prompt, **extra)
    assert got == expected


@pytest.mark.parametrize("name", ["system_user", "multi_turn", "tool_calls"])
def test_tokenized_template_matches_transformers(pair, name):
    ours, hf = pair
    messages = CONVERSATIONS[name]
    expected = hf.apply_chat_template(messages, tokenize=True, return_dict=False, add_generation_prompt=True,
                                      tools=[WEATHER_TOOL])
    assert ours.apply_chat_template(messages, tokenize=True, add_generation_prompt=True, tools=[WEATHER_TOOL]) == expected
    as_dict = hf.apply_chat_template(messages, tokenize=True, return_dict=True, add_generation_prompt=True)
    assert ours.apply_chat_template(messages, tokenize=True, return_dict=True, add_generation_prompt=True) == dict(as_dict)


def test_batched_conversations(pair):
    ours, hf = pair
    batch = [CONVERSATIONS["user_only"], CONVERSATIONS["multi_turn"]]
    expected = hf.apply_chat_template(batch, tokenize=False, add_generation_prompt=True)
    assert ours.apply_chat_template(batch, add_generation_prompt=True) == expected
    ids = ours.apply_chat_template(batch, tokenize=True, add_generation_prompt=True)
    assert ids == [ours.encode(text, add_special_tokens=False) for text in expected]


def test_continue_final_message(pair):
    ours, hf = pair
    messages = [{"role": "user", "content": "Count to 3"}, {"role": "assistant", "content": "1, 2,"}]
    expected = hf.apply_chat_template(messages, tokenize=False, continue_final_message=True)
    assert ours.apply_chat_template(messages, continue_final_message=True) == expected
    with pytest.raises(ValueError):
        ours.apply_chat_template(messages, continue_final_message=True, add_generation_prompt=True)


def test_template_globals_and_filters(pair):
    # transformers' environment: raise_exception, strftime_now, tojson without HTML escaping,
    # trim_blocks/lstrip_blocks, and the special tokens as variables.
    ours, hf = pair
    template = ("{% for m in messages %}\n  {{ m | tojson }}|{{ eos_token }}|{{ pad_token }}\n{% endfor %}"
                "{% if bos_token is none %}no-bos{% endif %}{{ strftime_now('%Y') | length }}"
                "{% if custom %}{{ custom }}{% endif %}")
    messages = [{"role": "user", "content": "<b>&'\"é"}]
    expected = hf.apply_chat_template(messages, tokenize=False, chat_template=template, custom="yes")
    assert ours.apply_chat_template(messages, chat_template=template, custom="yes") == expected
    failing = "{{ raise_exception('bad role: ' + messages[0].role) }}"
    import jinja2

    with pytest.raises(jinja2.exceptions.TemplateError, match="bad role: user"):
        ours.apply_chat_template(messages, chat_template=failing)


def test_special_tokens_and_sizes_match_transformers(pair):
    ours, hf = pair
    assert ours.eos_token_id == hf.eos_token_id
    assert ours.pad_token_id == hf.pad_token_id
    assert ours.bos_token_id == hf.bos_token_id
    assert ours.eos_token == hf.eos_token
    assert ours.pad_token == hf.pad_token
    assert ours.special_tokens_map == hf.special_tokens_map
    assert ours.vocab_size == hf.vocab_size
    assert len(ours) == len(hf)
    assert ours.chat_template == hf.chat_template


def test_cpp_render_chatml_matches_qwen3_template(pair):
    # Where Qwen3's template is plain ChatML (no tools, no final assistant turn), the C++
    # renderer for Python-free applications agrees with it.
    ours, hf = pair
    for name in ["user_only", "system_user", "multi_turn"]:
        messages = CONVERSATIONS[name]
        pairs = [(m["role"], m["content"]) for m in messages]
        for add_generation_prompt in (False, True):
            expected = hf.apply_chat_template(messages, tokenize=False, add_generation_prompt=add_generation_prompt)
            assert _C.render_chatml(pairs, add_generation_prompt) == expected


def test_errors(pair, tmp_path):
    ours, _ = pair
    with pytest.raises(ValueError, match="empty conversation"):
        ours.apply_chat_template([])
    with pytest.raises(ValueError, match="JSON schemas"):
        ours.apply_chat_template(CONVERSATIONS["user_only"], tools=[len])
    with pytest.raises(verl.CheckpointError, match="does not exist"):
        verl.load_tokenizer(tmp_path / "missing")
    (tmp_path / "tokenizer.json").write_text("{not json")
    with pytest.raises(verl.CheckpointError, match="malformed JSON"):
        verl.load_tokenizer(tmp_path)
    (tmp_path / "tokenizer.json").write_text('{"model": {"type": "WordPiece", "vocab": {}}}')
    with pytest.raises(verl.InvalidArgumentError, match="model.type 'WordPiece'"):
        verl.load_tokenizer(tmp_path / "tokenizer.json")
    (tmp_path / "tokenizer.json").write_text('{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}}')
    no_template = verl.load_tokenizer(tmp_path)
    assert no_template.eos_token_id is None and no_template.chat_template is None
    with pytest.raises(ValueError, match="no chat template"):
        no_template.apply_chat_template(CONVERSATIONS["user_only"])


def test_named_templates_are_chosen_as_transformers_chooses(tmp_path):
    (tmp_path / "tokenizer.json").write_text('{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}}')
    (tmp_path / "tokenizer_config.json").write_text(
        '{"eos_token": "a", "chat_template": [{"name": "default", "template": "D{{ eos_token }}"},'
        ' {"name": "tool_use", "template": "T{{ tools | length }}"}, {"name": "rag", "template": "R"}]}')
    tok = verl.load_tokenizer(tmp_path)
    messages = [{"role": "user", "content": "x"}]
    assert tok.chat_template == {"default": "D{{ eos_token }}", "tool_use": "T{{ tools | length }}", "rag": "R"}
    assert tok.apply_chat_template(messages) == "Da"
    assert tok.apply_chat_template(messages, tools=[WEATHER_TOOL]) == "T1"
    assert tok.apply_chat_template(messages, chat_template="rag") == "R"
    assert tok.apply_chat_template(messages, chat_template="literal {{ 1 + 1 }}") == "literal 2"
    # A chat_template.jinja beside the tokenizer replaces the config's templates.
    (tmp_path / "chat_template.jinja").write_text("J")
    single = verl.load_tokenizer(tmp_path)
    assert single.chat_template == "J"
    assert single.apply_chat_template(messages, chat_template="rag") == "rag"  # one template: text, not a name
