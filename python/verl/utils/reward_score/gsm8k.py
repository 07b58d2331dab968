"""GSM8K scorer (verl's ``verl.utils.reward_score.gsm8k``): the final answer follows ``#### ``.

``strict`` reads only answers written as ``#### <number>`` (it also checks the model kept the format);
``flexible`` takes the last number anywhere. Only the last 300 characters are searched: the answer sits at
the end, and regex work on multi-thousand-character rollouts would dominate scoring time.
"""

from __future__ import annotations

import re

__all__ = ["extract_solution", "compute_score"]

_SOLUTION_CLIP_CHARS = 300
_STRICT_PATTERN = re.compile(r"#### (\-?[0-9\.\,]+)")
_NUMBER_PATTERN = re.compile(r"(\-?[0-9\.\,]+)")


def extract_solution(solution_str: str, method: str = "strict") -> str | None:
    """The answer string (commas removed under ``strict``), or None when there is none."""
    if method not in ("strict", "flexible"):
        raise ValueError(f"gsm8k.extract_solution: method must be 'strict' or 'flexible', got {method!r}")
    tail = solution_str[-_SOLUTION_CLIP_CHARS:]
    if method == "strict":
        found = _STRICT_PATTERN.findall(tail)
        if not found:
            return None
        return found[-1].replace(",", "").replace("$", "")
    # flexible: the last match that is more than a lone "." (or empty). As in verl, when every match is
    # invalid the loop variable is left on the first match, so that one is returned.
    found = _NUMBER_PATTERN.findall(tail)
    answer = None
    for answer in reversed(found):
        if answer not in ("", "."):
            break
    return answer


def compute_score(solution_str: str, ground_truth: str, method: str = "strict", format_score: float = 0.0,
                  score: float = 1.0) -> float:
    """``score`` for the right answer, ``format_score`` for a wrong but extractable one, 0 when none is found.

    The answer is compared as a string with ``ground_truth`` (verl compares exactly, no numeric parsing).
    """
    answer = extract_solution(solution_str, method=method)
    if answer is None:
        return 0
    return score if answer == ground_truth else format_score
