"""Python callables as reward functions: the calling convention is detected once, from the signature.

``RewardFunction(fn)`` wraps any of these forms (the first rule that applies wins):

1. ``fn.batched = True`` / ``False`` (an attribute on the function) forces the batched / per-sample form.
2. **Batched, one dict** when the only required parameter is named ``data_batch`` (the tutorials'
   ``compute_reward(data_batch)``): it gets ``{"prompts": [...], "responses": [...], "ground_truth": [...],
   "data_source": [...], "extra_info": [...]}`` (one entry per sample in each list) and returns a sequence of
   rewards as below.
3. **Batched** when a parameter is named ``responses``, ``solution_strs``, ``ground_truths``,
   ``data_sources``, ``extra_infos`` or ``prompts``. The function gets lists (one entry per sample) for the
   names it declares and returns a sequence of rewards of the same length (list, tuple, numpy array, 1-D
   tensor), e.g. ``def f(responses, ground_truths): return [float(r == g) for r, g in zip(...)]`` or
   verl's batch signature ``f(data_sources, solution_strs, ground_truths, extra_infos, **kwargs)``.
4. **Per-sample by keyword** when every parameter without a default has a known name: ``response`` (or
   verl's ``solution_str``), ``ground_truth``, ``data_source``, ``extra_info``, ``prompt``. verl's
   ``compute_score(data_source, solution_str, ground_truth, extra_info=None)`` is this form. A function
   taking only ``**kwargs`` gets verl's four keywords.
5. **Per-sample by position**, from the number of required positional parameters:
   1 -> ``f(response)``, 2 -> ``f(response, ground_truth)``, 3 -> ``f(data_source, solution_str,
   ground_truth)``, 4 -> ``f(data_source, solution_str, ground_truth, extra_info)`` (verl's order).
   With explicit ``batched = True`` the same counts apply to lists. A parameter with a known name must sit at
   the position of its field (``f(ground_truth, x)`` is rejected).

Anything else (no parameters, only ``*args``, a required parameter with an unknown name beyond these
counts) is an ``InvalidArgumentError`` at wrap time, naming the function.

Any form may be ``async def`` (or return a coroutine from an ``async __call__``): a batched one is awaited once
per batch, a per-sample one is awaited for every sample concurrently, at most ``max_concurrent`` at once
(``reward.max_concurrent``, verl 0.9.1's name for the bound, default ``DEFAULT_MAX_CONCURRENT``).

A reward is a number (bool, int, float, numpy scalar, one-element tensor) or a dict with a ``"score"`` entry
(the other entries go to ``reward_extra_info``). An exception inside the function, a NaN / inf, or a
non-numeric reward (str, None, ...) raises ``verl.RewardError`` naming the sample index, its data_source and
the first 200 characters of the response, with the original exception chained.
"""

from __future__ import annotations

import inspect
import math
import signal
import threading
from collections.abc import Callable, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch

from ..errors import ConfigError, InvalidArgumentError, RewardError
from ..utils.async_run import TimedOut, gather_bounded, run_coroutine

__all__ = ["RewardFunction", "ScoreTimeout", "check_reward", "split_score",
           "sample_description", "check_max_concurrent", "RESPONSE_PREVIEW_CHARS", "DEFAULT_MAX_CONCURRENT"]

RESPONSE_PREVIEW_CHARS = 200

#: How many samples an async per-sample reward function scores at once when ``reward.max_concurrent`` is unset
#: (verl's default bound for concurrent sandbox requests, ``sandbox_fusion.max_concurrent``).
DEFAULT_MAX_CONCURRENT = 64

# per-sample keyword name -> the field it receives; the batched names receive lists of the same fields
_SAMPLE_NAMES = {
    "response": "response",
    "solution_str": "response",
    "ground_truth": "ground_truth",
    "data_source": "data_source",
    "extra_info": "extra_info",
    "prompt": "prompt",
}
_BATCH_NAMES = {
    "responses": "response",
    "solution_strs": "response",
    "ground_truths": "ground_truth",
    "data_sources": "data_source",
    "extra_infos": "extra_info",
    "prompts": "prompt",
}
_POSITIONAL_FIELDS = {
    1: ("response",),
    2: ("response", "ground_truth"),
    3: ("data_source", "response", "ground_truth"),
    4: ("data_source", "response", "ground_truth", "extra_info"),
}
#: the one parameter of the dict-batched form, and the keys of the dict it receives -> fields
_DICT_BATCH_PARAM = "data_batch"
_DICT_BATCH_KEYS = {"prompts": "prompt", "responses": "response", "ground_truth": "ground_truth",
                    "data_source": "data_source", "extra_info": "extra_info"}
_VERL_KEYWORDS = {"data_source": "data_source", "solution_str": "response", "ground_truth": "ground_truth",
                  "extra_info": "extra_info"}
_VERL_BATCH_KEYWORDS = {"data_sources": "data_source", "solution_strs": "response", "ground_truths": "ground_truth",
                        "extra_infos": "extra_info"}


class ScoreTimeout(TimeoutError):
    """A sample's scoring ran past the per-sample timeout (``RewardFunction.score_each``'s ``timeout``, the naive
    manager's ``compute_score_timeout``): put in that sample's place so the manager can score it 0.0 (a
    TimeoutError the scorer raises itself is an error like any other)."""


@contextmanager
def _alarm(seconds: float):
    """ScoreTimeout raised into the block when it runs past ``seconds`` (SIGALRM: the main thread only)."""

    def _handler(signum, frame):
        raise ScoreTimeout(f"compute_score timed out after {seconds}s")

    previous = signal.signal(signal.SIGALRM, _handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _call_with_timeout(fn: Callable[[], Any], seconds: float | None) -> Any:
    """``fn()``, or ScoreTimeout when it runs past ``seconds``. One pathological rollout (catastrophic regex
    backtracking, a slow symbolic check) must not stall training; verl scores such a sample 0.0 and goes on. On the
    main thread SIGALRM interrupts it; elsewhere -- the trainer scores on other threads while the engine decodes, and
    on the one-step off-policy rollout thread -- it runs in a daemon thread that is abandoned when it times out
    (Python cannot stop a thread), as verl abandons a timed-out scoring task."""
    if not seconds or seconds <= 0:
        return fn()
    if threading.current_thread() is threading.main_thread():
        with _alarm(seconds):
            return fn()
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = fn()
        except BaseException as e:  # noqa: BLE001 -- re-raised on the caller's thread
            outcome["error"] = e

    worker = threading.Thread(target=run, name="verl-score-timeout", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise ScoreTimeout(f"compute_score timed out after {seconds}s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def check_max_concurrent(value: Any, key: str = "reward.max_concurrent") -> int:
    """The concurrency bound as an int >= 1; ``ConfigError`` naming ``key`` otherwise (None: the default)."""
    if value is None:
        return DEFAULT_MAX_CONCURRENT
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ConfigError(f"{key} must be an integer >= 1, got {value!r}")
    return int(value)


def _is_async(fn: Any) -> bool:
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)
    return not inspect.isfunction(fn) and not inspect.ismethod(fn) and inspect.iscoroutinefunction(call)


def sample_description(index: int, data_source: Any, response: str) -> str:
    """``sample 3 (data_source='openai/gsm8k', response[:200]='...')`` for error messages."""
    return (f"sample {index} (data_source={data_source!r}, "
            f"response[:{RESPONSE_PREVIEW_CHARS}]={str(response)[:RESPONSE_PREVIEW_CHARS]!r})")


def check_reward(value: Any, index: int, data_source: Any, response: str) -> float:
    """The reward as a finite float; ``RewardError`` naming the sample for anything else."""
    where = sample_description(index, data_source, response)
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise RewardError(f"reward function returned a tensor of shape {tuple(value.shape)} for {where}; "
                              "expected one number per sample")
        value = value.item()
    elif isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if isinstance(value, (bool, np.bool_)):
        return float(value)
    if not isinstance(value, (int, float, np.integer, np.floating)):
        raise RewardError(f"reward function returned a non-numeric reward {value!r} "
                          f"(type {type(value).__name__}) for {where}")
    result = float(value)
    if not math.isfinite(result):
        raise RewardError(f"reward function returned a non-finite reward {result} for {where}")
    return result


def split_score(value: Any, index: int, data_source: Any, response: str) -> tuple[float, dict | None]:
    """(reward, the dict itself when the function returned one): dicts must carry a ``"score"`` entry."""
    if isinstance(value, dict):
        if "score" not in value:
            raise RewardError(f"reward function returned a dict without a 'score' entry (keys {sorted(value)}) for "
                              f"{sample_description(index, data_source, response)}")
        return check_reward(value["score"], index, data_source, response), value
    return check_reward(value, index, data_source, response), None


class RewardFunction:
    """A user reward callable with its calling convention resolved once (see the module docstring).

    ``score(index, response=..., ground_truth=..., data_source=..., extra_info=..., prompt=...)`` calls a
    per-sample function; ``score_batch(responses=[...], ...)`` calls a batched one (or a per-sample one once
    per sample). Both return the raw values (numbers or dicts) and raise ``RewardError`` on an exception.
    """

    def __init__(self, fn: Callable[..., Any], bound_kwargs: dict[str, Any] | None = None) -> None:
        if isinstance(fn, RewardFunction):  # re-wrapping keeps the kwargs bound by the inner one
            bound_kwargs = {**fn.bound_kwargs, **(bound_kwargs or {})}
            fn = fn.fn
        if not callable(fn):
            raise InvalidArgumentError(f"reward_fn must be callable, got {type(fn).__name__}")
        self.fn = fn
        #: whether calls return coroutines (``async def``), awaited by the scoring methods
        self.is_async = _is_async(fn)
        self.name = _name(fn)
        try:
            signature = inspect.signature(fn)
        except (TypeError, ValueError) as e:
            raise InvalidArgumentError(f"cannot read the signature of reward_fn {self.name}; wrap it in a def") from e
        # ``bound_kwargs`` (custom_reward_function.reward_kwargs) are passed on every call, over the inputs as
        # in verl, so those parameters are not reward inputs.
        self.bound_kwargs = dict(bound_kwargs or {})
        params = [p for p in signature.parameters.values() if p.name not in self.bound_kwargs]
        self.batched, self._keywords, self._positional = self._resolve(params, getattr(fn, "batched", None))
        #: whether the function reads the decoded prompt (managers skip decoding prompts otherwise)
        self.wants_prompt = ("prompt" in self._keywords.values() or "prompt" in self._positional
                             or _DICT_BATCH_PARAM in self._positional)

    # -- detection --------------------------------------------------------------------------------
    def _resolve(self, params: list[inspect.Parameter], forced: Any) -> tuple[bool, dict[str, str], tuple[str, ...]]:
        """(batched, keyword name -> field, positional fields)."""
        if forced is not None and not isinstance(forced, bool):
            raise InvalidArgumentError(f"reward_fn {self.name}: attribute 'batched' must be a bool, got {forced!r}")
        names = {p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
        has_var_kw = any(p.kind == p.VAR_KEYWORD for p in params)
        batched = forced if forced is not None else bool(names & _BATCH_NAMES.keys())
        known = _BATCH_NAMES if batched else _SAMPLE_NAMES
        required = [p for p in params if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        if forced is not False and [p.name for p in required] == [_DICT_BATCH_PARAM] and \
                required[0].kind in (required[0].POSITIONAL_ONLY, required[0].POSITIONAL_OR_KEYWORD):
            return True, {}, (_DICT_BATCH_PARAM,)

        unknown = [p.name for p in required if p.name not in known]
        if (names & known.keys() or (not names and has_var_kw)) and not unknown:
            if any(p.kind == p.POSITIONAL_ONLY and p.name in known for p in params):
                raise InvalidArgumentError(f"reward_fn {self.name}: reward inputs cannot be positional-only")
            keywords = {name: known[name] for name in names if name in known}
            if has_var_kw:  # **kwargs takes verl's keywords
                keywords.update(_VERL_BATCH_KEYWORDS if batched else _VERL_KEYWORDS)
            return batched, keywords, ()

        positional = [p for p in required if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        if len(positional) != len(required) or len(positional) not in _POSITIONAL_FIELDS:
            raise InvalidArgumentError(
                f"reward_fn {self.name}{inspect.signature(self.fn)}: cannot tell which arguments it takes "
                f"(parameters {unknown} are not reward inputs); use f(response), f(response, ground_truth), verl's "
                "f(data_source, solution_str, ground_truth, extra_info), or a batched f(responses, ...); known "
                f"names: {sorted(known)} (see verl.trainer.reward_fn)")
        fields = _POSITIONAL_FIELDS[len(positional)]
        misplaced = [p.name for p, f in zip(positional, fields) if p.name in known and known[p.name] != f]
        if misplaced:
            raise InvalidArgumentError(
                f"reward_fn {self.name}{inspect.signature(self.fn)}: cannot tell which arguments it takes: by "
                f"position it would get {list(fields)}, but parameter(s) {misplaced} are named otherwise; give every "
                f"required parameter a known name ({sorted(known)}) or use verl's order (see verl.trainer.reward_fn)")
        return batched, {}, fields

    # -- calls ------------------------------------------------------------------------------------
    def _call(self, fields: dict[str, Any]) -> Any:
        if self._positional == (_DICT_BATCH_PARAM,):
            return self.fn({key: fields[f] for key, f in _DICT_BATCH_KEYS.items()}, **self.bound_kwargs)
        args = [fields[f] for f in self._positional]
        kwargs = {name: fields[f] for name, f in self._keywords.items()}
        return self.fn(*args, **{**kwargs, **self.bound_kwargs})

    def score(self, index: int, *, response: str, ground_truth: Any = None, data_source: Any = None,
              extra_info: Any = None, prompt: str | None = None) -> Any:
        """One sample through a per-sample function; the raw value (number or dict)."""
        if self.batched:
            return self.score_batch(responses=[response], ground_truths=[ground_truth], data_sources=[data_source],
                                    extra_infos=[extra_info], prompts=[prompt], first_index=index)[0]
        fields = {"response": response, "ground_truth": ground_truth, "data_source": data_source,
                  "extra_info": extra_info, "prompt": prompt}
        try:
            value = self._call(fields)
            return run_coroutine(value) if self.is_async else value
        except (RewardError, ScoreTimeout):
            raise
        except Exception as e:
            raise self._sample_error(e, index, fields) from e

    def _sample_error(self, e: Exception, index: int, fields: Mapping[str, Any]) -> RewardError:
        return RewardError(f"reward function {self.name} raised {type(e).__name__}: {e} on "
                           f"{sample_description(index, fields.get('data_source'), fields.get('response'))}")

    def score_each(self, samples: Sequence[Mapping[str, Any]], first_index: int = 0, timeout: float | None = None,
                   max_concurrent: int = DEFAULT_MAX_CONCURRENT) -> list[Any]:
        """Every sample (a dict of ``response``, ``ground_truth``, ``data_source``, ``extra_info``, ``prompt``)
        through a per-sample function: one after the other for a plain function, concurrently for an async one
        (at most ``max_concurrent`` awaiting at once). The raw values in sample order; a sample that ran past
        ``timeout`` seconds has a ``ScoreTimeout`` in its place. The first failing sample (by index) raises
        ``RewardError`` naming it. (A batched function gets one call per sample.)"""
        if self.batched or not self.is_async:
            results = []
            for i, fields in enumerate(samples):
                try:
                    results.append(_call_with_timeout(lambda: self.score(first_index + i, **fields), timeout))
                except ScoreTimeout as e:
                    results.append(e)
            return results

        def factory(fields: Mapping[str, Any]) -> Callable[[], Any]:
            return lambda: self._call(fields)

        results = run_coroutine(gather_bounded([factory(f) for f in samples], max_concurrent, timeout))
        for i, (fields, result) in enumerate(zip(samples, results)):
            if isinstance(result, TimedOut):
                results[i] = ScoreTimeout(f"compute_score timed out after {result.seconds}s")
            elif isinstance(result, RewardError):
                raise result
            elif isinstance(result, BaseException):
                raise self._sample_error(result, first_index + i, fields) from result
        return results

    def score_batch(self, responses: Sequence[str], ground_truths: Sequence[Any], data_sources: Sequence[Any],
                    extra_infos: Sequence[Any], prompts: Sequence[str | None] | None = None,
                    first_index: int = 0, max_concurrent: int = DEFAULT_MAX_CONCURRENT) -> list[Any]:
        """Every sample: one call to a batched function, or one call per sample (``score_each``); a list of raw
        values."""
        n = len(responses)
        prompts = list(prompts) if prompts is not None else [None] * n
        if not self.batched:
            return self.score_each([{"response": responses[i], "ground_truth": ground_truths[i],
                                     "data_source": data_sources[i], "extra_info": extra_infos[i],
                                     "prompt": prompts[i]} for i in range(n)], first_index=first_index,
                                   max_concurrent=max_concurrent)
        fields = {"response": list(responses), "ground_truth": list(ground_truths), "data_source": list(data_sources),
                  "extra_info": list(extra_infos), "prompt": prompts}
        try:
            values = self._call(fields)
            if self.is_async:
                values = run_coroutine(values)
        except RewardError:
            raise
        except Exception as e:
            first = sample_description(first_index, data_sources[0], responses[0]) if n else "an empty batch"
            raise RewardError(f"batched reward function {self.name} raised {type(e).__name__}: {e} on samples "
                              f"{first_index}..{first_index + n - 1} (the first is {first})") from e
        if isinstance(values, torch.Tensor):
            values = values.reshape(-1).tolist() if values.dim() <= 1 else values
        if isinstance(values, (str, bytes, dict)) or not isinstance(values, (Sequence, np.ndarray)):
            raise RewardError(f"batched reward function {self.name} returned {type(values).__name__}; expected a "
                              f"sequence of {n} rewards")
        values = list(values)
        if len(values) != n:
            raise RewardError(f"batched reward function {self.name} returned {len(values)} rewards for {n} samples")
        return values

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Calls the wrapped function with the bound kwargs merged in (verl's ``_call_with_kwargs``)."""
        return self.fn(*args, **{**kwargs, **self.bound_kwargs})

    def __repr__(self) -> str:
        form = "batched" if self.batched else "per-sample"
        how = f"keywords {sorted(self._keywords)}" if self._keywords else f"positional {list(self._positional)}"
        return f"RewardFunction({self.name}, {form}, {how})"


def _name(fn: Any) -> str:
    inner = getattr(fn, "func", None)  # functools.partial
    return getattr(fn, "__qualname__", None) or getattr(inner, "__qualname__", None) or type(fn).__name__

