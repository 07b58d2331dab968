"""Rows of the data files a user supplies (JSONL / JSON / Parquet), read without ever failing with anything
but a ``verl.DataError`` naming ``file:line``.

Data files are untrusted input: a fuzzer found that a byte that is not UTF-8 ended in a bare
``UnicodeDecodeError``, a row nested ~1,000 deep in a ``RecursionError`` from ``json.loads``, and a ``"\\ud800"``
escape (a lone surrogate, which ``json.loads`` accepts but no text encoding can hold) in a ``UnicodeEncodeError``
much later, at tokenization. Here every such file is refused while it is read:

- the bytes must be UTF-8 (the error names the line and column of the first bad byte);
- JSON may nest at most ``MAX_JSON_DEPTH`` arrays/objects, the limit of libverl's JSON reader
  (``verl::untrusted::kMaxJsonDepth``, cpp/src/core/untrusted.h), so both readers accept the same files;
- strings (values and keys) must not hold lone surrogates, which libverl's reader refuses as well.

JSONL lines are split on ``"\\n"`` only (a trailing ``"\\r"`` is dropped), as libverl does: ``str.splitlines``
would also split inside a row at U+2028, U+0085 or a form feed, which JSON allows raw inside strings.
"""

from __future__ import annotations

import json
import os
import re
from itertools import accumulate
from dataclasses import dataclass
from typing import Any

from ...errors import DataError

__all__ = ["MAX_JSON_DEPTH", "RowOrigin", "decode_utf8", "load_json", "read_rows"]

# Deepest nesting of arrays/objects accepted: verl::untrusted::kMaxJsonDepth (128 levels accepted, 129 refused).
MAX_JSON_DEPTH = 128

# A JSON string (skipped whole, so brackets inside it do not count) or one bracket.
_STRING = r'"[^"\\]*(?:\\.[^"\\]*)*"'
_STRING_OR_BRACKET = re.compile(_STRING + r"|[\[\]{}]")
_STRINGS = re.compile(_STRING)
_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")
_DEPTH_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
# A \u escape of a UTF-16 surrogate in JSON text: only then can json.loads produce a lone surrogate
# (surrogates cannot be written in UTF-8, which decode_utf8 has checked).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class RowOrigin:
    """Where a row came from, for error messages: ``file:line`` (Parquet and JSON array files: the 1-based row
    number)."""

    path: str
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


def decode_utf8(data: bytes, path: str, error: type[Exception] = DataError) -> str:
    """``data`` decoded as UTF-8; ``error("<path>:<line>: not valid UTF-8 (byte 0x.. at column ..)")`` otherwise."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line_start = data.rfind(b"\n", 0, e.start) + 1
        line = data.count(b"\n", 0, e.start) + 1
        raise error(f"{path}:{line}: not valid UTF-8 (byte 0x{data[e.start]:02x} at column "
                    f"{e.start - line_start + 1}); data files must be UTF-8 text") from e


def _too_deep_at(text: str) -> int | None:
    """Offset in ``text`` of the first bracket nested deeper than MAX_JSON_DEPTH, or None. Scans without
    recursion, and only texts holding enough brackets to nest that deep."""
    if text.count("[") + text.count("{") <= MAX_JSON_DEPTH:
        return None
    # The deepest nesting, computed at C speed (regex substitutions, then a running sum over the brackets left):
    # a whole .json file of rows is one text, and a per-token Python loop over it costs seconds.
    brackets = _NOT_BRACKETS.sub("", _STRINGS.sub("", text))
    if max(accumulate(map(_DEPTH_STEP.__getitem__, brackets)), default=0) <= MAX_JSON_DEPTH:
        return None
    # Too deep: find where, for the message.
    depth = 0
    for match in _STRING_OR_BRACKET.finditer(text):
        token = match.group()
        if token in ("[", "{"):
            depth += 1
            if depth > MAX_JSON_DEPTH:
                return match.start()
        elif token in ("]", "}"):
            depth -= 1
    return None


def _lone_surrogate_at(value: Any) -> tuple[str, str] | None:
    """(field path such as ``prompt[0].content``, the surrogate) of the first string or key in ``value`` holding a
    lone surrogate, or None. Iterative; ``value`` is at most MAX_JSON_DEPTH deep anyway."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            if found := _SURROGATE.search(item):
                return path or "the row", found.group()
        elif isinstance(item, dict):
            children = []
            for key, child in item.items():
                if isinstance(key, str) and (found := _SURROGATE.search(key)):
                    return f"a key of {path or 'the row'}", found.group()
                children.append((child, f"{path}.{key}" if path else str(key)))
            stack.extend(reversed(children))  # depth-first in document order: the first bad string is named
        elif isinstance(item, list):
            stack.extend((child, f"{path}[{i}]") for i, child in reversed(list(enumerate(item))))
    return None


def _line_of(text: str, origin: str, offset: int) -> str:
    """``origin`` plus the line of ``offset`` when ``text`` is a whole multi-line file, else ``origin`` itself."""
    return f"{origin}:{text.count(chr(10), 0, offset) + 1}" if "\n" in text else origin


def _load_json(text: str, origin: str, error: type[Exception], may_hold_surrogates: bool) -> Any:
    deep = _too_deep_at(text)
    if deep is not None:
        raise error(f"{_line_of(text, origin, deep)}: JSON nests deeper than {MAX_JSON_DEPTH} levels (column "
                    f"{deep - text.rfind(chr(10), 0, deep)})")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise error(f"{_line_of(text, origin, e.pos)}: invalid JSON: {e.msg} (column {e.colno})") from e
    except ValueError as e:  # e.g. an integer literal over Python's 4300-digit conversion limit
        raise error(f"{origin}: invalid JSON: {e}") from e
    if may_hold_surrogates and _SURROGATE_ESCAPE.search(text) and (found := _lone_surrogate_at(value)):
        field, surrogate = found
        raise error(f"{origin}: {field} holds a lone surrogate (\\u{ord(surrogate):04x}), which is not valid "
                    "Unicode text")
    return value


def load_json(text: str, origin: str, error: type[Exception] = DataError) -> Any:
    """``json.loads(text)`` for untrusted text; ``error`` naming ``origin`` (``file:line``) when the text is not
    JSON, nests deeper than MAX_JSON_DEPTH or holds a lone surrogate. ``origin`` of a multi-line text (a whole
    ``.json`` file) is its path, and the message adds the line."""
    return _load_json(text, origin, error, may_hold_surrogates=True)


def read_json_file(path: str | os.PathLike, error: type[Exception] = DataError) -> Any:
    """The JSON value in the file at ``path`` (config.json, a checkpoint's metadata, ...), read as untrusted
    input: ``error`` naming the file (and line) when it cannot be opened, is not UTF-8 or not JSON, nests
    deeper than MAX_JSON_DEPTH or holds a lone surrogate."""
    path = os.fspath(path)
    shown = os.fsdecode(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise error(f"cannot read {shown!r}: {e.strerror or e}") from e
    return load_json(decode_utf8(data, shown, error), shown, error)


def _read_json_rows(path: str) -> list[tuple[Any, int]]:
    with open(path, "rb") as f:
        text = decode_utf8(f.read(), path)
    if path.endswith(".json") and text.lstrip().startswith("["):  # a JSON array file
        rows = load_json(text, path)
        # line numbers of array items are not tracked; report item positions (1-based) instead
        return [(row, i + 1) for i, row in enumerate(rows)]
    # One search of the whole file spares the per-line search when no line can hold a surrogate.
    may_hold_surrogates = _SURROGATE_ESCAPE.search(text) is not None
    rows = []
    for lineno, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if line.strip():
            rows.append((_load_json(line, f"{path}:{lineno}", DataError, may_hold_surrogates), lineno))
    return rows


def _read_parquet_rows(path: str) -> list[tuple[Any, int]]:
    try:
        import pyarrow.parquet as pq
    except ImportError as e:
        raise DataError(f"{path}: reading Parquet needs pyarrow (pip install pyarrow), or convert the file to JSONL") \
            from e
    try:
        # Arrow strings are UTF-8 by definition (to_pylist raises on bad bytes: caught here) and cannot hold
        # surrogates, and Parquet schemas bound the nesting; so no further check of the values is needed.
        rows = pq.read_table(path).to_pylist()
    except Exception as e:
        raise DataError(f"{path}: cannot read Parquet: {type(e).__name__}: {e}") from e
    return [(row, i + 1) for i, row in enumerate(rows)]


def read_rows(path: str | os.PathLike) -> list[tuple[Any, int]]:
    """(row, line) pairs of a .jsonl / .json / .parquet file; ``DataError`` naming ``file:line`` for a file that
    is missing, not UTF-8, not JSON, nested too deep, or holding a lone surrogate."""
    path = os.fspath(path)
    expanded = os.path.expanduser(path)
    if not os.path.isfile(expanded):
        raise DataError(f"data file not found: {path}")
    if expanded.endswith(".parquet"):
        return _read_parquet_rows(expanded)
    if expanded.endswith((".jsonl", ".json")):
        return _read_json_rows(expanded)
    raise DataError(f"Unsupported file format: {path} (expected .jsonl, .json or .parquet)")
