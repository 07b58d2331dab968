"""Rule-based reward scorers (verl's ``verl.utils.reward_score``) and the ``data_source`` dispatch.

``default_compute_score(data_source, solution_str, ground_truth, extra_info)`` is what the reward managers
call when no ``custom_reward_function`` is configured. Ported scorers: ``openai/gsm8k`` (``gsm8k``), the MATH
sets (``math_reward``), the DAPO math sets (``math_dapo``) and the code sets (``codecontests``, ``apps``,
``codeforces``, ``taco``): with ``sandbox_fusion_url`` (``reward.sandbox_fusion.url``) their test cases run on
that Sandbox Fusion server (``sandbox_fusion``), else in the built-in local sandbox (``prime_code``). Other verl
data sources (prime_math, geometry3k, search-R1) need verl's third-party dependencies and raise
``NotImplementedError``, as unknown data sources do in verl.
"""

from __future__ import annotations

from typing import Any

from ...errors import DataError
from . import gsm8k, math_dapo, math_reward, prime_code, sandbox_fusion

__all__ = ["default_compute_score", "get_default_compute_score", "gsm8k", "math_reward", "math_dapo", "prime_code",
           "sandbox_fusion", "CODE_DATA_SOURCES"]

MATH_DATA_SOURCES = ("lighteval/MATH", "DigitalLearningGmbH/MATH-lighteval", "HuggingFaceH4/MATH-500")
DAPO_DATA_SOURCES = ("math_dapo", "math", "math_dapo_reasoning")  # and every source starting with "aime"
CODE_DATA_SOURCES = ("codecontests", "apps", "codeforces", "taco")

# Data sources verl scores with modules that need extra services or packages (not ported here).
_UNPORTED_DATA_SOURCES = (
    "numina_aops_forum", "numina_synthetic_math", "numina_amc_aime", "numina_synthetic_amc", "numina_cn_k12",
    "numina_olympiads", "hiyouga/geometry3k", "searchR1_nq",
    "searchR1_triviaqa", "searchR1_popqa", "searchR1_hotpotqa", "searchR1_2wikimultihopqa", "searchR1_musique",
    "searchR1_bamboogle",
)


def default_compute_score(data_source: str, solution_str: str, ground_truth: Any, extra_info: dict | None = None,
                          sandbox_fusion_url: str | None = None, concurrent_semaphore: Any = None,
                          memory_limit_mb: int | None = None, **kwargs: Any) -> float | dict:
    """Score one response with the scorer for its ``data_source``.

    Returns a float, or the scorer's dict (``math_dapo`` gives ``{"score", "acc", "pred"}``).
    Raises ``NotImplementedError`` for a data source without a scorer, naming it, and ``verl.DataError`` for a
    sample without one (``data_source`` None: a row with no ``data_source`` field).
    """
    if data_source is None:
        raise DataError("default_compute_score needs the sample's data_source to choose a scorer (e.g. 'openai/gsm8k' "
                        "for GSM8K answers), and this row has none: add a 'data_source' field to the rows, or pass "
                        "reward_fn= to the trainer (or set custom_reward_function.path)")
    if data_source == "openai/gsm8k":
        result: Any = gsm8k.compute_score(solution_str, ground_truth)
    elif data_source in MATH_DATA_SOURCES:
        result = math_reward.compute_score(solution_str, ground_truth)
    elif data_source in DAPO_DATA_SOURCES or str(data_source).startswith("aime"):
        result = math_dapo.compute_score(solution_str, ground_truth)
    elif data_source in CODE_DATA_SOURCES:
        if sandbox_fusion_url:  # the test cases (ground_truth) run on the server
            result = sandbox_fusion.compute_score(sandbox_fusion_url, concurrent_semaphore, memory_limit_mb,
                                                  solution_str, ground_truth, continuous=True)
        else:  # verl runs prime_code in-process; here it runs in the local sandbox
            result = prime_code.compute_score(solution_str, ground_truth, continuous=True)
    elif data_source in _UNPORTED_DATA_SOURCES:
        raise NotImplementedError(
            f"Reward function for {data_source=} needs verl's external scorer (prime_math / mathruler / ...) which "
            "verl-cpp does not ship; set custom_reward_function.path or pass reward_fn=")
    else:
        raise NotImplementedError(f"Reward function is not implemented for {data_source=}")

    if isinstance(result, dict):
        return result
    if isinstance(result, (int, float, bool)):
        return float(result)
    return float(result[0])


def get_default_compute_score(reward_name: str | None = None):
    """The default scorer for a reward manager name (the same function for every manager, as in verl)."""
    return default_compute_score
