"""The calculator tool the model learns to call: ``calculator(expression)`` evaluates integer / decimal arithmetic.

The expression is text the model wrote, so it is parsed here by a small recursive-descent parser over exactly this
grammar and never handed to ``eval``::

    expression := term (("+" | "-") term)*
    term       := factor (("*" | "/") factor)*
    factor     := ("+" | "-") factor | number | "(" expression ")"
    number     := digits ["." digits]

Arithmetic is exact (``fractions.Fraction``): an integer result is written as an integer (``"1776"``), any other as
a decimal of at most 12 significant digits. Bad input raises ``ValueError`` saying what is wrong and where; the
agent loop answers such a call with a tool message holding that error (and counts it in ``num_tool_call_errors``),
so the model sees its mistake and the rollout goes on.
"""

from __future__ import annotations

from fractions import Fraction

MAX_EXPRESSION_LENGTH = 200  # characters; the task needs ~5, and the bound keeps numbers and nesting small
MAX_DEPTH = 32  # nested parentheses / signs (recursion depth of the parser)

# The tool's OpenAI function schema, written out so that the tokenizer builder, which runs without verl, renders the
# very tools block the agent loop renders (verl's FunctionTool derives the same schema from calculator's signature
# and docstring). Its text holds no digits: a tiny model copying the problem's operands into its call would
# otherwise learn to copy an example's too.
TOOL_SCHEMA = {
    "type": "function",
    "function": {
        "name": "calculator",
        "description": "Evaluate an arithmetic expression.",
        "parameters": {
            "type": "object",
            "properties": {"expression": {"type": "string",
                                          "description": "The arithmetic to evaluate, such as a product."}},
            "required": ["expression"],
        },
    },
}


def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression.

    Args:
        expression: The arithmetic to evaluate, such as a product.
    """
    if not isinstance(expression, str):
        raise ValueError(f"expression must be a string such as \"12*34\", got {type(expression).__name__} "
                         f"{expression!r}")
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise ValueError(f"expression is {len(expression)} characters long; at most {MAX_EXPRESSION_LENGTH} are "
                         "accepted")
    return format_number(_Parser(expression).parse())


def format_number(value: Fraction) -> str:
    if value.denominator == 1:
        return str(value.numerator)
    return f"{float(value):.12g}"


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.depth = 0

    def parse(self) -> Fraction:
        self._skip_spaces()
        if self.pos == len(self.text):
            raise ValueError("empty expression")
        value = self._expression()
        if self.pos != len(self.text):
            raise self._error("unexpected")
        return value

    # -- grammar ----------------------------------------------------------------------------------------------
    def _expression(self) -> Fraction:
        value = self._term()
        while self._peek() in ("+", "-"):
            op = self._take()
            right = self._term()
            value = value + right if op == "+" else value - right
        return value

    def _term(self) -> Fraction:
        value = self._factor()
        while self._peek() in ("*", "/"):
            op = self._take()
            at = self.pos
            right = self._factor()
            if op == "/" and right == 0:
                raise ValueError(f"division by zero at position {at} in {self.text!r}")
            value = value * right if op == "*" else value / right
        return value

    def _factor(self) -> Fraction:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ValueError(f"expression nests deeper than {MAX_DEPTH} levels")
        try:
            char = self._peek()
            if char in ("+", "-"):
                self._take()
                value = self._factor()
                return value if char == "+" else -value
            if char == "(":
                self._take()
                value = self._expression()
                if self._peek() != ")":
                    raise self._error("expected ')' but found", missing="expected ')' at the end of")
                self._take()
                return value
            if char.isascii() and char.isdigit():
                return self._number()
            raise self._error("expected a number or '(' but found", missing="expected a number at the end of")
        finally:
            self.depth -= 1

    def _number(self) -> Fraction:
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos] in "0123456789":
            self.pos += 1
        if self.pos < len(self.text) and self.text[self.pos] == ".":
            self.pos += 1
            digits = self.pos
            while self.pos < len(self.text) and self.text[self.pos] in "0123456789":
                self.pos += 1
            if self.pos == digits:
                raise ValueError(f"number without digits after '.' at position {start} in {self.text!r}")
        value = Fraction(self.text[start:self.pos])
        self._skip_spaces()
        return value

    # -- characters -------------------------------------------------------------------------------------------
    def _peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def _take(self) -> str:
        char = self.text[self.pos]
        self.pos += 1
        self._skip_spaces()
        return char

    def _skip_spaces(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] == " ":
            self.pos += 1

    def _error(self, found: str, missing: str = "unexpected end of") -> ValueError:
        if self.pos == len(self.text):
            return ValueError(f"{missing} {self.text!r}")
        return ValueError(f"{found} {self.text[self.pos]!r} at position {self.pos} in {self.text!r} (allowed: "
                          "numbers, + - * /, parentheses and spaces)")
