"""DAPO math scorer (verl's ``verl.utils.reward_score.math_dapo``): +1 / -1 reward plus ``acc`` and ``pred``.

The answer is read Minerva-style from the last ``Answer: ...`` line and normalised with
``normalize_final_answer``; when there is no such line the last ``\\boxed{}`` in the final 100 characters is
used, compared verbatim. ``strict_box_verify`` uses only the boxed answer.
"""

from __future__ import annotations

import re

__all__ = [
    "compute_score",
    "verify",
    "is_correct_minerva",
    "is_correct_strict_box",
    "normalize_final_answer",
    "last_boxed_only_string",
    "remove_boxed",
]

_INVALID = "[INVALID]"

# Applied in order (e.g. "an " before "a ", " " removal before the "\text{and}" forms).
SUBSTITUTIONS = [
    ("an ", ""),
    ("a ", ""),
    (".$", "$"),
    ("\\$", ""),
    (r"\ ", ""),
    (" ", ""),
    ("mbox", "text"),
    (",\\text{and}", ","),
    ("\\text{and}", ","),
    ("\\text{m}", "\\text{}"),
]

REMOVED_EXPRESSIONS = [
    "square", "ways", "integers", "dollars", "mph", "inches", "hours", "km", "units", "\\ldots", "sue", "points",
    "feet", "minutes", "digits", "cents", "degrees", "cm", "gm", "pounds", "meters", "meals", "edges", "students",
    "childrentickets", "multiples", "\\text{s}", "\\text{.}", "\\text{\ns}", "\\text{}^2", "\\text{}^3",
    "\\text{\n}", "\\text{}", r"\mathrm{th}", r"^\circ", r"^{\circ}", r"\;", r",\!", "{,}", '"', "\\dots",
]


def last_boxed_only_string(string: str) -> str | None:
    """The last ``\\boxed{...}`` with balanced braces, or None (no ``\\fbox`` / ``\\boxed `` forms here)."""
    idx = string.rfind("\\boxed{")
    if idx < 0:
        return None
    depth = 0
    for i in range(idx, len(string)):
        if string[i] == "{":
            depth += 1
        elif string[i] == "}":
            depth -= 1
            if depth == 0:
                return string[idx:i + 1]
    return None


def remove_boxed(s: str) -> str:
    """The content of ``\\boxed{...}``; ValueError for any other shape."""
    left = "\\boxed{"
    if not s.startswith(left) or not s.endswith("}"):
        raise ValueError(f"box error: {s}")
    return s[len(left):-1]


def normalize_final_answer(final_answer: str) -> str:
    """Normalises a final answer (Minerva, Lewkowycz et al. 2022): right side of '=', units and TeX removed."""
    final_answer = final_answer.split("=")[-1]
    for before, after in SUBSTITUTIONS:
        final_answer = final_answer.replace(before, after)
    for expr in REMOVED_EXPRESSIONS:
        final_answer = final_answer.replace(expr, "")

    final_answer = re.sub(r"(.*?)(\$)(.*?)(\$)(.*)", "$\\3$", final_answer)
    final_answer = re.sub(r"(\\text\{)(.*?)(\})", "\\2", final_answer)
    final_answer = re.sub(r"(\\textbf\{)(.*?)(\})", "\\2", final_answer)
    final_answer = re.sub(r"(\\overline\{)(.*?)(\})", "\\2", final_answer)
    final_answer = re.sub(r"(\\boxed\{)(.*)(\})", "\\2", final_answer)
    # shorthand TeX: \fracab -> \frac{a}{b}, \sqrta -> \sqrt{a}
    final_answer = re.sub(r"(frac)([^{])(.)", "frac{\\2}{\\3}", final_answer)
    final_answer = re.sub(r"(sqrt)([^{])", "sqrt{\\2}", final_answer)
    final_answer = final_answer.replace("$", "")

    if final_answer.replace(",", "").isdigit():
        final_answer = final_answer.replace(",", "")
    return final_answer.strip()


def is_correct_minerva(solution_str: str, gt: str, gt_need_extract: bool = False,
                       answer_pattern: str = r"(?i)Answer\s*:\s*([^\n]+)") -> tuple[bool, str]:
    """(normalised last ``Answer:`` == normalised gt, normalised prediction); prediction ``[INVALID]`` if none."""
    match = re.findall(answer_pattern, solution_str)
    pred = normalize_final_answer(match[-1] if match else _INVALID)
    if gt_need_extract:
        boxed = last_boxed_only_string(gt)
        if boxed is None:
            raise ValueError(f"math_dapo: ground truth has no \\boxed{{}} answer: {gt!r}")
        gt = normalize_final_answer(remove_boxed(boxed))
    else:
        gt = normalize_final_answer(gt)
    return pred == gt, pred


def is_correct_strict_box(pred: str, gt: str, pause_tokens_index: list[int] | None = None) -> tuple[int, str | None]:
    """(1 | -1, boxed content of the last 100 characters, or None); compared verbatim with ``gt``."""
    if pause_tokens_index is not None:
        if len(pause_tokens_index) != 4:
            raise ValueError(f"math_dapo: pause_tokens_index needs 4 entries, got {len(pause_tokens_index)}")
        pred = pred[pause_tokens_index[-1] - 100:]
    else:
        pred = pred[-100:]
    boxed = last_boxed_only_string(pred)
    extracted = remove_boxed(boxed) if boxed is not None else None
    return (1 if extracted == gt else -1), extracted


def verify(solution_str: str, answer: str, strict_box_verify: bool = False,
           pause_tokens_index: list[int] | None = None) -> tuple[bool, str | None]:
    """(correct, prediction): Minerva ``Answer:`` first, the boxed answer when that finds nothing."""
    if strict_box_verify:
        correct, pred = is_correct_strict_box(solution_str, answer, pause_tokens_index)
        return correct == 1, pred
    correct, pred = is_correct_minerva(solution_str, answer)
    if pred != _INVALID:
        return correct, pred
    box_correct, box_pred = is_correct_strict_box(solution_str, answer, pause_tokens_index)
    if box_pred is not None:
        return box_correct == 1, box_pred
    return correct, pred


def compute_score(solution_str: str, ground_truth: str, strict_box_verify: bool = False,
                  pause_tokens_index: list[int] | None = None) -> dict:
    """``{"score": 1.0 | -1.0, "acc": bool, "pred": str | None}`` for the last 300 characters of the solution."""
    solution_str = solution_str[-300:]  # the longest MATH-500 answer is 159 characters
    correct, pred = verify(solution_str, ground_truth, strict_box_verify, pause_tokens_index)
    return {"score": 1.0 if correct else -1.0, "acc": correct, "pred": pred}
