"""MATH scorer (verl's ``verl.utils.reward_score.math_reward``): the last ``\\boxed{...}`` answer, normalised
with the Hendrycks-MATH string rules (lm-evaluation-harness), compared with the ground truth.

The helpers keep verl's names (``last_boxed_only_string``, ``remove_boxed``, ``strip_string``, ``is_equiv``)
because user reward functions import them.
"""

from __future__ import annotations

__all__ = [
    "compute_score",
    "is_equiv",
    "last_boxed_only_string",
    "remove_boxed",
    "strip_string",
    "fix_fracs",
    "fix_a_slash_b",
    "fix_sqrt",
    "remove_right_units",
]


def compute_score(solution_str: str, ground_truth: str) -> float:
    """1.0 when the last boxed answer is equivalent to ``ground_truth``, else 0.0 (also on a malformed box)."""
    boxed = last_boxed_only_string(solution_str)
    if boxed is None:
        return 0.0
    try:
        answer = remove_boxed(boxed)
    except ValueError:
        # verl asserts the box shape and turns the AssertionError into 0.0; a malformed box scores 0.
        return 0.0
    return 1.0 if is_equiv(answer, ground_truth) else 0.0


def is_equiv(str1: str | None, str2: str | None, verbose: bool = False) -> bool:
    """Equal after ``strip_string`` normalisation (two Nones are equal, one None is not)."""
    if str1 is None and str2 is None:
        return True
    if str1 is None or str2 is None:
        return False
    try:
        ss1, ss2 = strip_string(str1), strip_string(str2)
    except Exception:  # noqa: BLE001 - verl's documented fallback, kept for identical scores
        # Normalisation fails on odd inputs (two "\text{ " unit markers, a trailing "\sqrt" or "\frac", a
        # non-string ground truth); verl then compares the raw values.
        return str1 == str2
    if verbose:
        print(ss1, ss2)
    return ss1 == ss2


def remove_boxed(s: str) -> str:
    """The content of ``\\boxed{...}`` / ``\\boxed ...``; ValueError for any other shape."""
    if "\\boxed " in s:
        left = "\\boxed "
        if not s.startswith(left):
            raise ValueError(f"box error: {s}")
        return s[len(left):]
    left = "\\boxed{"
    if not s.startswith(left) or not s.endswith("}"):
        raise ValueError(f"box error: {s}")
    return s[len(left):-1]


def last_boxed_only_string(string: str) -> str | None:
    """The last ``\\boxed{...}`` (or ``\\fbox{...}``) with balanced braces, or ``\\boxed <text up to $>``."""
    idx = string.rfind("\\boxed")
    if "\\boxed " in string:
        return "\\boxed " + string.split("\\boxed ")[-1].split("$")[0]
    if idx < 0:
        idx = string.rfind("\\fbox")
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


def fix_fracs(string: str) -> str:
    """``\\frac12`` -> ``\\frac{1}{2}``, ``\\frac1{72}`` -> ``\\frac{1}{72}``; unchanged when a frac is too short."""
    pieces = string.split("\\frac")
    out = pieces[0]
    for piece in pieces[1:]:
        out += "\\frac"
        if piece[0] == "{":  # IndexError on a trailing "\frac", as in verl (is_equiv falls back)
            out += piece
            continue
        if len(piece) < 2:
            return string
        a, b, rest = piece[0], piece[1], piece[2:]
        if b != "{":
            out += "{" + a + "}{" + b + "}" + rest
        else:
            out += "{" + a + "}" + b + rest
    return out


def fix_a_slash_b(string: str) -> str:
    """``3/4`` -> ``\\frac{3}{4}`` when both sides are plain integers written canonically."""
    parts = string.split("/")
    if len(parts) != 2:
        return string
    try:
        a, b = int(parts[0]), int(parts[1])
    except ValueError:
        return string
    if string != f"{a}/{b}":
        return string
    return "\\frac{" + str(a) + "}{" + str(b) + "}"


def remove_right_units(string: str) -> str:
    """Drops a trailing unit written as ``\\text{ unit}`` (the only use of ``\\text{ `` in MATH answers)."""
    if "\\text{ " not in string:
        return string
    splits = string.split("\\text{ ")
    if len(splits) != 2:
        raise ValueError(f"more than one unit in {string!r}")
    return splits[0]


def fix_sqrt(string: str) -> str:
    """``\\sqrt3`` -> ``\\sqrt{3}``."""
    if "\\sqrt" not in string:
        return string
    splits = string.split("\\sqrt")
    out = splits[0]
    for split in splits[1:]:
        if split[0] != "{":  # IndexError on a trailing "\sqrt", as in verl (is_equiv falls back)
            out += "\\sqrt{" + split[0] + "}" + split[1:]
        else:
            out += "\\sqrt" + split
    return out


def strip_string(string: str) -> str:
    """Hendrycks-MATH answer normalisation, step for step as in verl (order matters)."""
    string = string.replace("\n", "")
    string = string.replace("\\!", "")
    string = string.replace("\\\\", "\\")
    string = string.replace("tfrac", "frac").replace("dfrac", "frac")
    string = string.replace("\\left", "").replace("\\right", "")
    string = string.replace("^{\\circ}", "").replace("^\\circ", "")
    string = string.replace("\\$", "")
    string = remove_right_units(string)
    string = string.replace("\\\\%", "").replace("\\%", "")
    # " .5" -> " 0.5", "{.5" -> "{0.5", leading ".5" -> "0.5"
    string = string.replace(" .", " 0.").replace("{.", "{0.")
    if len(string) == 0:
        return string
    if string[0] == ".":
        string = "0" + string
    # "k = 3" -> "3" when the left side is a short variable name
    if len(string.split("=")) == 2 and len(string.split("=")[0]) <= 2:
        string = string.split("=")[1]
    string = fix_sqrt(string)
    string = string.replace(" ", "")
    string = fix_fracs(string)
    if string == "0.5":
        string = "\\frac{1}{2}"
    string = fix_a_slash_b(string)
    return string
