"""verl's scorers on hand-checked edge cases (values read off verl 0.9.1's rules)."""

from __future__ import annotations

import pytest

from verl.utils.reward_score import default_compute_score, gsm8k, math_dapo, math_reward


@pytest.mark.parametrize(
    ("solution", "method", "expected"),
    [
        ("so she has 72 apples.\n#### 72", "strict", "72"),
        ("#### 1,234", "strict", "1234"),  # commas dropped
        ("#### -3.5", "strict", "-3.5"),
        ("#### 5\n#### 6", "strict", "6"),  # the last one wins
        ("####72", "strict", None),  # strict needs the space
        ("the answer is 72", "strict", None),
        ("the answer is 72", "flexible", "72"),
        ("3 apples and 1,000 pears.", "flexible", "1,000"),  # flexible keeps commas
        ("total 12 .", "flexible", "12"),  # a lone '.' is skipped
        ("#### 9" + "x" * 300, "strict", None),  # only the last 300 characters are searched
    ],
)
def test_gsm8k_extract_solution(solution, method, expected):
    assert gsm8k.extract_solution(solution, method=method) == expected


def test_gsm8k_scores_answer_format_and_missing():
    assert gsm8k.compute_score("#### 72", "72") == 1.0
    assert gsm8k.compute_score("#### 71", "72", format_score=0.1) == 0.1
    assert gsm8k.compute_score("no answer", "72", format_score=0.1) == 0
    assert gsm8k.compute_score("#### 72.0", "72") == 0.0  # string comparison, as in verl
    with pytest.raises(ValueError, match="method"):
        gsm8k.extract_solution("#### 1", method="loose")


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        ("\\frac12", "\\frac{1}{2}", True),
        ("\\dfrac{1}{2}", "0.5", True),  # dfrac -> frac, 0.5 -> \frac{1}{2}
        ("1/2", "\\frac{1}{2}", True),
        ("x = 3", "3", True),
        ("10\\text{ cm}", "10", True),
        ("90^\\circ", "90", True),
        ("50\\%", "50", True),
        ("\\sqrt3", "\\sqrt{3}", True),
        ("\\left( 1,2 \\right)", "(1,2)", True),
        (".5", "\\frac{1}{2}", True),
        ("03/4", "\\frac{3}{4}", False),  # not written canonically, left as is
        ("\\frac", "\\frac", True),  # normalisation fails -> raw comparison
        ("1 \\frac", "1\\frac", False),  # a trailing \frac fails normalisation: raw strings differ
        ("2 \\sqrt", "2\\sqrt", False),  # likewise a trailing \sqrt
        ("2", "3", False),
        (None, None, True),
        (None, "1", False),
    ],
)
def test_math_is_equiv(a, b, equal):
    assert math_reward.is_equiv(a, b) is equal


def test_math_boxed_extraction():
    assert math_reward.last_boxed_only_string("a \\boxed{1} b \\boxed{\\frac{1}{2}} c") == "\\boxed{\\frac{1}{2}}"
    assert math_reward.last_boxed_only_string("$\\boxed 5$ ok") == "\\boxed 5"
    assert math_reward.last_boxed_only_string("\\fbox{7}") == "\\fbox{7}"
    assert math_reward.last_boxed_only_string("\\boxed{1") is None
    assert math_reward.last_boxed_only_string("none") is None
    assert math_reward.compute_score("so \\boxed{\\dfrac{1}{2}}.", "0.5") == 1.0
    assert math_reward.compute_score("\\fbox{7}", "7") == 0.0  # an fbox is found but is not a \boxed{}
    assert math_reward.compute_score("\\boxed{8}", "7") == 0.0


def test_math_dapo_minerva_then_box():
    assert math_dapo.compute_score("blah\nAnswer: 1,000 dollars", "1000") == {"score": 1.0, "acc": True, "pred": "1000"}
    assert math_dapo.compute_score("Answer: 5\nanswer: 6", "5") == {"score": -1.0, "acc": False, "pred": "6"}
    assert math_dapo.compute_score("so \\boxed{12}", "12") == {"score": 1.0, "acc": True, "pred": "12"}
    # the boxed fallback compares verbatim (no normalisation)
    assert math_dapo.compute_score("so \\boxed{\\frac12}", "\\frac{1}{2}")["score"] == -1.0
    assert math_dapo.compute_score("nothing", "3") == {"score": -1.0, "acc": False, "pred": "[INVALID]"}
    assert math_dapo.normalize_final_answer("x = \\text{(A)}") == "(A)"
    assert math_dapo.normalize_final_answer("\\frac12") == "\\frac{1}{2}"


def test_default_compute_score_dispatch():
    assert default_compute_score("openai/gsm8k", "#### 3", "3") == 1.0
    assert isinstance(default_compute_score("openai/gsm8k", "nothing", "3"), float)
    assert default_compute_score("lighteval/MATH", "\\boxed{3}", "3") == 1.0
    assert default_compute_score("HuggingFaceH4/MATH-500", "\\boxed{2}", "3") == 0.0
    assert default_compute_score("aime2024", "Answer: 3", "3")["score"] == 1.0
    assert default_compute_score("math_dapo", "Answer: 4", "3")["acc"] is False
    with pytest.raises(NotImplementedError, match="my_source"):
        default_compute_score("my_source", "x", "y")
    with pytest.raises(NotImplementedError, match="numina_olympiads"):
        default_compute_score("numina_olympiads", "x", "y")
