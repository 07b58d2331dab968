"""Reward managers give exactly verl 0.9.1's reward tensors and extra info on the same batches.

verl's own NaiveRewardManager / DAPORewardManager / BatchRewardManager run in the reference venv
(``~/.cache/verl-cpp/verl-ref-venv``) with transformers' Qwen3 tokenizer. Importing verl there takes ~30 s, so
this check is opt-in: ``VERL_REFERENCE_TESTS=1 pytest tests/python/trainer/reward/test_managers_vs_verl.py``.
"""

from __future__ import annotations

import json
import os
import random
import subprocess

import pytest
import torch

from verl.workers.reward_manager import BatchRewardManager, DAPORewardManager, NaiveRewardManager

REF_PYTHON = os.path.expanduser("~/.cache/verl-cpp/verl-ref-venv/bin/python")

pytestmark = pytest.mark.skipif(
    os.environ.get("VERL_REFERENCE_TESTS") != "1" or not os.path.isfile(REF_PYTHON),
    reason="opt-in (VERL_REFERENCE_TESTS=1) and needs the verl 0.9.1 reference venv")

# The same batched scorer on both sides.
BATCH_SCORER = '''
def batch_score(data_sources, solution_strs, ground_truths, extra_infos, **kwargs):
    return [{"score": float(len(s) % 3) - 1.0, "length": len(s)} for s in solution_strs]
'''

_REFERENCE_SCRIPT = r'''
import json, sys, types
import torch
import transformers
from verl import DataProto
from verl.workers.reward_manager import BatchRewardManager, DAPORewardManager, NaiveRewardManager
exec(open(sys.argv[3]).read())
tok = transformers.AutoTokenizer.from_pretrained(sys.argv[4])
import numpy as np
batches = torch.load(sys.argv[1])
def column(values):
    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        out[i] = v
    return out
out = {}
def plain(info):
    return {k: [float(x) if torch.is_tensor(x) else x for x in v] for k, v in info.items()}
for name, b in batches.items():
    non_tensors = {k: column(json.loads(v)) for k, v in b["non_tensors"].items()}
    data = DataProto.from_dict(tensors=b["tensors"], non_tensors=non_tensors)
    kind = b["kind"]
    if kind == "naive":
        m = NaiveRewardManager(tok, 0)
    elif kind == "dapo":
        cfg = types.SimpleNamespace(**b["overlong"])
        m = DAPORewardManager(tok, 0, max_resp_len=b["max_resp_len"], overlong_buffer_cfg=cfg)
    else:
        m = BatchRewardManager(tok, 0, compute_score=batch_score)
    r = m(data, return_dict=True)
    out[name] = {"reward": r["reward_tensor"].tolist(), "info": plain(r["reward_extra_info"])}
json.dump(out, open(sys.argv[2], "w"))
'''

GSM8K = ["Let me think. 3 + 4 = 7.\n#### 7", "#### 1,000", "The answer is 12", "#### -5", "no idea"]
MATH = ["so \\boxed{\\frac12}", "\\boxed{0.5}", "x = \\boxed{3}", "\\boxed{\\sqrt3} done", "\\fbox{2}"]
DAPO = ["Answer: 12", "so \\boxed{12}", "Answer: 1,000 dollars", "Answer: x = 5", "nothing here"]


def _batches(tokenizer, make_batch):
    rng = random.Random(0)
    out = {}

    def build(kind, source, responses, truths, response_length=40, **extra):
        prompts = [rng.choice(["Q?", "A longer question about numbers?", "Compute it."]) for _ in responses]
        batch = make_batch(prompts, responses, truths, data_sources=[source] * len(responses),
                           prompt_length=12, response_length=response_length)
        return {"kind": kind, "data": batch, **extra}

    out["gsm8k"] = build("naive", "openai/gsm8k", GSM8K, ["7", "1000", "12", "-5", "3"])
    out["math"] = build("naive", "lighteval/MATH", MATH, ["\\frac{1}{2}", "\\frac{1}{2}", "3", "\\sqrt{3}", "2"])
    out["dapo_dicts"] = build("naive", "math_dapo", DAPO, ["12", "12", "1000", "5", "1"])
    lengths = [10, 28, 31, 36, 40]  # max_resp_len 40, buffer 12: penalties start after 28 tokens
    go = tokenizer.encode(" go", add_special_tokens=False)
    overlong = [go * (n - 3) + tokenizer.encode(" Answer: 9", add_special_tokens=False)[:3] for n in lengths]
    out["dapo_overlong"] = build("dapo", "aime2024", overlong, ["9"] * 5, overlong={
        "enable": True, "len": 12, "penalty_factor": 0.7, "log": True}, max_resp_len=40)
    out["batch"] = build("batch", "custom", GSM8K, ["7"] * 5)
    return out


def test_managers_match_verl(tmp_path, tokenizer, batch_maker, qwen3_dir):
    batches = _batches(tokenizer, batch_maker)
    payload = {name: {"kind": b["kind"], "tensors": dict(b["data"].batch.items()),
                      "non_tensors": {k: json.dumps(v.tolist()) for k, v in b["data"].non_tensor_batch.items()},
                      **{k: v for k, v in b.items() if k in ("overlong", "max_resp_len")}}
               for name, b in batches.items()}
    torch.save(payload, tmp_path / "batches.pt")
    (tmp_path / "scorer.py").write_text(BATCH_SCORER)
    (tmp_path / "ref.py").write_text(_REFERENCE_SCRIPT)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run([REF_PYTHON, str(tmp_path / "ref.py"), str(tmp_path / "batches.pt"),
                             str(tmp_path / "out.json"), str(tmp_path / "scorer.py"), qwen3_dir],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    expected = json.loads((tmp_path / "out.json").read_text())

    namespace: dict = {}
    exec(BATCH_SCORER, namespace)
    for name, b in batches.items():
        if b["kind"] == "naive":
            manager = NaiveRewardManager(tokenizer, 0)
        elif b["kind"] == "dapo":
            manager = DAPORewardManager(tokenizer, 0, max_resp_len=b["max_resp_len"], overlong_buffer_cfg=b["overlong"])
        else:
            manager = BatchRewardManager(tokenizer, 0, compute_score=namespace["batch_score"])
        ours = manager(b["data"], return_dict=True)
        # float32 on both sides; verl adds the overlong term in float32, we in float64 before the store
        torch.testing.assert_close(ours["reward_tensor"], torch.tensor(expected[name]["reward"]), rtol=0, atol=1e-6,
                                   msg=name)
        assert ours["reward_tensor"].dtype == torch.float32
        info = {k: list(v) for k, v in ours["reward_extra_info"].items()}
        assert info.keys() == expected[name]["info"].keys(), name
        for key, values in expected[name]["info"].items():
            assert info[key] == pytest.approx(values) if key != "pred" else info[key] == values, (name, key)
    # the scenarios are not degenerate
    assert any(v > 0 for row in expected["gsm8k"]["reward"] for v in row)
    assert any(v < 0 for row in expected["dapo_overlong"]["reward"] for v in row)
