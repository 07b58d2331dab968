"""Chat template files that are not UTF-8 (issue 21, bug 10): libverl reads ``chat_template.jinja`` and
``additional_chat_templates/*.jinja`` as bytes, and they reached Python as a bare ``UnicodeDecodeError`` when the
tokenizer handed them over. Loading such a tokenizer is a ``verl.CheckpointError`` naming the file."""

from __future__ import annotations

import os
import re
import shutil

import pytest

import verl

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
ARITH_TOKENIZER = os.path.join(REPO_ROOT, "examples", "arith", "tokenizer")
TEMPLATE = "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"


@pytest.fixture
def tokenizer_dir(tmp_path):
    directory = tmp_path / "tok"
    shutil.copytree(ARITH_TOKENIZER, directory)
    return directory


def test_valid_template_file_is_used(tokenizer_dir):
    (tokenizer_dir / "chat_template.jinja").write_text(TEMPLATE + "caf\u00e9", encoding="utf-8")
    tok = verl.load_tokenizer(tokenizer_dir)
    assert tok.chat_template == TEMPLATE + "caf\u00e9"
    assert tok.apply_chat_template([{"role": "user", "content": "hi"}]) == "<|user|>hi\ncaf\u00e9"


@pytest.mark.parametrize("bad", [b"\xff", b"\xc3(", b"\xed\xa0\x80"])  # invalid byte, cut sequence, a surrogate
def test_template_file_not_utf8_is_a_checkpoint_error_naming_it(tokenizer_dir, bad):
    (tokenizer_dir / "chat_template.jinja").write_bytes(TEMPLATE.encode() + b"\n" + bad)
    path = os.path.join(str(tokenizer_dir), "chat_template.jinja")
    with pytest.raises(verl.CheckpointError, match=rf"^{re.escape(path)}: not valid UTF-8"):
        verl.load_tokenizer(tokenizer_dir)
    with pytest.raises(verl.CheckpointError, match="chat_template.jinja"):  # through tokenizer.json itself too
        verl.load_tokenizer(tokenizer_dir / "tokenizer.json")


def test_additional_template_file_not_utf8_is_a_checkpoint_error_naming_it(tokenizer_dir):
    (tokenizer_dir / "chat_template.jinja").write_text(TEMPLATE, encoding="utf-8")
    extra = tokenizer_dir / "additional_chat_templates"
    extra.mkdir()
    (extra / "tool_use.jinja").write_bytes(b"{{ messages }}\xfe")
    with pytest.raises(verl.CheckpointError, match=r"additional_chat_templates/tool_use\.jinja: not valid UTF-8"):
        verl.load_tokenizer(tokenizer_dir)
