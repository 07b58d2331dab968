"""The ported scorers give exactly verl 0.9.1's outputs on seeded generated inputs.

verl's own functions run in the reference venv (``~/.cache/verl-cpp/verl-ref-venv``) in a subprocess; the
test skips when that venv is not there.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from verl.utils.reward_score import gsm8k, math_dapo, math_reward

from .cases import MATH_ANSWERS, dapo_cases, gsm8k_cases, math_cases

REF_PYTHON = os.path.expanduser("~/.cache/verl-cpp/verl-ref-venv/bin/python")

_REFERENCE_SCRIPT = r"""
import contextlib, importlib.util, io, json, os, sys
# Load verl 0.9.1's scorer files directly: they only need `re`, and `import verl` would pull in torch & co.
root = os.path.dirname(importlib.util.find_spec("verl").origin)
assert open(os.path.join(root, "version", "version")).read().strip() == "0.9.1"
def load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(root, "utils", "reward_score", name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
gsm8k, math_reward, math_dapo = load("gsm8k"), load("math_reward"), load("math_dapo")
cases = json.load(open(sys.argv[1]))
out = {}
with contextlib.redirect_stdout(io.StringIO()):  # math_reward prints the exceptions it swallows
    out["gsm8k"] = [gsm8k.compute_score(**c) for c in cases["gsm8k"]]
    out["math"] = [math_reward.compute_score(**c) for c in cases["math"]]
    out["math_equiv"] = [math_reward.is_equiv(c["a"], c["b"]) for c in cases["math_equiv"]]
    out["math_dapo"] = [math_dapo.compute_score(**c) for c in cases["math_dapo"]]
json.dump(out, open(sys.argv[2], "w"))
"""


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    if not os.path.isfile(REF_PYTHON):
        pytest.skip(f"verl 0.9.1 reference venv not found at {REF_PYTHON}")
    math = math_cases(400)
    cases = {
        "gsm8k": gsm8k_cases(400),
        "math": math,
        # is_equiv directly on pairs of raw answers: hits every strip_string rule without the box step
        "math_equiv": [{"a": c["solution_str"][-40:], "b": c["ground_truth"]} for c in math]
        + [{"a": a, "b": b} for a in MATH_ANSWERS for b in MATH_ANSWERS],  # every pair of the answer pool
        "math_dapo": dapo_cases(400),
    }
    tmp = tmp_path_factory.mktemp("verl_ref")
    (tmp / "cases.json").write_text(json.dumps(cases))
    script = tmp / "ref.py"
    script.write_text(_REFERENCE_SCRIPT)
    # Run outside the repo with a clean PYTHONPATH so `import verl` is verl 0.9.1, not this package.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run([REF_PYTHON, str(script), str(tmp / "cases.json"), str(tmp / "out.json")], cwd=tmp,
                            env=env, capture_output=True, text=True, timeout=300)
    if result.returncode != 0 and "find_spec" in result.stderr:
        pytest.skip(f"reference venv cannot import verl: {result.stderr[-300:]}")
    assert result.returncode == 0, result.stderr
    return cases, json.loads((tmp / "out.json").read_text())


def _mismatches(ours, theirs, cases):
    return [(c, o, t) for c, o, t in zip(cases, ours, theirs) if o != t or type(o) is not type(t)]


def test_gsm8k_matches_verl(reference):
    cases, expected = reference
    ours = [gsm8k.compute_score(**c) for c in cases["gsm8k"]]
    assert len(ours) == len(expected["gsm8k"]) == 400
    assert _mismatches(ours, expected["gsm8k"], cases["gsm8k"]) == []
    # the generator must exercise each outcome, or the comparison proves little
    assert {0, 0.0, 0.1, 1.0, 2.0} <= set(ours)


def test_math_reward_matches_verl(reference):
    cases, expected = reference
    ours = [math_reward.compute_score(**c) for c in cases["math"]]
    assert _mismatches(ours, expected["math"], cases["math"]) == []
    assert 20 < sum(ours) < len(ours) - 20


def test_math_is_equiv_matches_verl(reference):
    cases, expected = reference
    ours = [math_reward.is_equiv(c["a"], c["b"]) for c in cases["math_equiv"]]
    assert _mismatches(ours, expected["math_equiv"], cases["math_equiv"]) == []
    assert any(ours) and not all(ours)


def test_math_dapo_matches_verl(reference):
    cases, expected = reference
    ours = [math_dapo.compute_score(**c) for c in cases["math_dapo"]]
    assert _mismatches(ours, expected["math_dapo"], cases["math_dapo"]) == []
    scores = [o["score"] for o in ours]
    assert scores.count(1.0) > 20 and scores.count(-1.0) > 20
