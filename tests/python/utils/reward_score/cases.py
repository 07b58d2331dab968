"""Seeded generators of scorer inputs that hit the normalisation rules of gsm8k / math / math_dapo."""

from __future__ import annotations

import random

_WORDS = ["The answer is", "so we get", "Therefore", "Step 1:", "total", "apples", "We compute", "hence", "=", ":"]
_NUMBERS = ["72", "-3", "1,000", "1,234,567", "3.5", "0.25", ".", "..", "-0", "10.", "$5", "7,", ",8", "42", "-1,5"]


def gsm8k_cases(n: int, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    cases = []
    for _ in range(n):
        parts = [rng.choice(_WORDS) + " " + rng.choice(_NUMBERS) for _ in range(rng.randint(0, 5))]
        for _ in range(rng.randint(0, 2)):
            parts.append(rng.choice(["#### ", "####", "#### $", "####  ", "# ### "]) + rng.choice(_NUMBERS))
        if rng.random() < 0.2:
            parts.insert(0, "x" * rng.randint(250, 400))
        if rng.random() < 0.2:
            parts.append("y" * rng.randint(0, 320))
        rng.shuffle(parts) if rng.random() < 0.3 else None
        text = rng.choice([" ", "\n", ". "]).join(parts)
        gt = rng.choice(["72", "-3", "1000", "1234567", "3.5", "42", "8", "5", "10."])
        method = rng.choice(["strict", "flexible"])
        cases.append({"solution_str": text, "ground_truth": gt, "method": method,
                      "format_score": rng.choice([0.0, 0.1]), "score": rng.choice([1.0, 2.0])})
    return cases


MATH_ANSWERS = [
    "\\frac12", "\\frac{1}{2}", "\\dfrac{1}{2}", "\\tfrac12", "0.5", ".5", "1/2", " 1 / 2", "x = 3", "3", "k=3",
    "10\\text{ cm}", "10", "10\\text{ cm}\\text{ m}", "\\sqrt3", "\\sqrt{3}", "2\\sqrt2", "\\left( 1, 2 \\right)",
    "(1,2)", "90^\\circ", "90^{\\circ}", "90", "50\\%", "50", "\\$5", "5", "\\frac{\\sqrt{3}}{2}", "\\frac\\sqrt32",
    "\\frac", "\\sqrt", "a/b", "03/4", "3/4", "\\frac{3}{4}", "\\!1", "\\\\frac{1}{2}", "\\{1,2\\}", "{.5}",
    "\\frac1{72}", "\\frac{72}1", "1 \\frac", "1\\frac", "2 \\sqrt", "2\\sqrt", "1\\text{ m}\\text{ s}",
    "1\\text{ m} \\text{ s}", "\\infty", "-\\infty", "x^2 + 1", "x^2+1", "", " ", "\n7", "7",
]


def _boxed_solution(rng: random.Random, answer: str) -> str:
    prefix = rng.choice(["", "We find that ", "So the final answer is ", "$", "Thus $x = ", "z" * 310 + " "])
    form = rng.randrange(8)
    if form == 0:
        body = "\\boxed{" + answer + "}"
    elif form == 1:
        body = "\\boxed " + answer + "$ done"
    elif form == 2:
        body = "\\fbox{" + answer + "}"
    elif form == 3:
        body = "\\boxed{" + answer  # unbalanced
    elif form == 4:
        body = "\\boxed{1} then \\boxed{" + answer + "}"
    elif form == 5:
        body = "\\boxed{{" + answer + "}}"
    elif form == 6:
        body = "Answer: " + answer
    else:
        body = "no box here " + answer
    return prefix + body + rng.choice(["", "$", ".", " \\quad", "\n"])


def math_cases(n: int, seed: int = 1) -> list[dict]:
    rng = random.Random(seed)
    cases = []
    for _ in range(n):
        answer = rng.choice(MATH_ANSWERS)
        # a third of the ground truths are the answer itself, so both outcomes are well represented
        gt = answer if rng.random() < 0.35 else rng.choice(MATH_ANSWERS)
        cases.append({"solution_str": _boxed_solution(rng, answer), "ground_truth": gt})
    return cases


_DAPO_ANSWERS = [
    "42", "1,000", "1000", "\\frac{1}{2}", "\\frac12", "frac12", "x = 5", "5", "10 feet", "10 dollars", "\\$10",
    "\\text{(A)}", "(A)", "\\textbf{B}", "\\overline{12}", "12", "$3$", "3", "an apple", "a 7", "\\sqrt2", "\\sqrt{2}",
    "90^\\circ", "90 degrees", "3\\text{ and }4", "3,4", "\\boxed{9}", "9", "1\\ldots", "{,}1", "7 mph", "7",
    "4\\;", "5 points", "2 \\mbox{cm}", "2", "  ", "",
]


def dapo_cases(n: int, seed: int = 2) -> list[dict]:
    rng = random.Random(seed)
    cases = []
    for _ in range(n):
        answer = rng.choice(_DAPO_ANSWERS)
        form = rng.randrange(6)
        lead = rng.choice(["", "Let me think.\n", "w" * rng.randint(200, 320) + "\n"])
        if form == 0:
            sol = lead + rng.choice(["Answer: ", "answer:", "ANSWER :  ", "Final Answer: "]) + answer
        elif form == 1:
            sol = lead + "So \\boxed{" + answer + "}"
        elif form == 2:
            sol = lead + "Answer: 1\nAnswer: " + answer + "\nDone"
        elif form == 3:
            sol = lead + "\\boxed{" + answer + "}" + "v" * rng.randint(90, 110)
        elif form == 4:
            sol = lead + "nothing"
        else:
            sol = lead + "Answer:\n" + answer
        gt = answer if rng.random() < 0.35 else rng.choice(_DAPO_ANSWERS)
        cases.append({"solution_str": sol, "ground_truth": gt,
                      "strict_box_verify": rng.random() < 0.2})
    return cases
