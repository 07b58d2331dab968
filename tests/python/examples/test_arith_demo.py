"""`make demo-arith` end to end at toy size (examples/arith/demo.py): data, SFT warm start, GRPO with validation before and
after, the report and summary.json. The real run's numbers are in the README; here the pipeline must work."""

from __future__ import annotations

import json
import os
import sys

ARITH_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "arith")
sys.path.insert(0, ARITH_DIR)
import arith_task  # noqa: E402
import demo  # noqa: E402


def test_demo_runs_sft_then_grpo_and_reports(tmp_path, capsys, monkeypatch):
    work = tmp_path / "demo"
    monkeypatch.delenv("VERL_FILE_LOGGER_ROOT", raising=False)
    assert demo.main(["--workdir", str(work), "--sft-steps", "30", "--rl-steps", "3", "--test-freq", "3",
                      "--prompts-per-step", "8", "--threads", "1"]) == 0
    # metrics under the workdir, and the caller's environment as it was (later tests log where they expect)
    assert os.path.exists(work / "logs" / "arith-demo" / "grpo.jsonl")
    assert "VERL_FILE_LOGGER_ROOT" not in os.environ
    out = capsys.readouterr().out
    for stage in ("== 1/4 task", "== 2/4 SFT warm start", "== 3/4 GRPO", "== 4/4 report", "held-out accuracy"):
        assert stage in out
    with open(work / "summary.json", encoding="utf-8") as f:
        summary = json.load(f)
    # validation before GRPO (step 0) and after its last step, on the 400 held-out problems
    assert [step for step, _ in summary["val_curve"]] == [0, 3]
    for key in ("greedy_acc", "sampled_acc"):
        assert set(summary[key]) == {"sft", "grpo"} and all(0.0 <= v <= 1.0 for v in summary[key].values())
    assert os.path.exists(work / "grpo_model" / "model.safetensors")
    assert os.path.exists(work / "sft" / "latest_checkpointed_iteration.txt")


def test_imperfect_teacher_adds_periods_deterministically_per_copy(tmp_path):
    problems = [(a, op, b) for a in range(10) for b in range(10) for op in "+-"]
    demos = [arith_task.teacher_answer(a, op, b, period_rate=0.6, seed=3, copy=1) for a, op, b in problems]
    assert demos == [arith_task.teacher_answer(a, op, b, 0.6, 3, 1) for a, op, b in problems]
    assert demos != [arith_task.teacher_answer(a, op, b, 0.6, 3, 2) for a, op, b in problems]
    for (a, op, b), demo_ in zip(problems, demos):  # the number is always right; only the period varies
        assert demo_.rstrip(".") == str(arith_task.answer(a, op, b))
        assert arith_task.compute_score("arith", demo_, str(arith_task.answer(a, op, b))) == (0.0 if demo_.endswith(".") else 1.0)
    assert 0.5 <= sum(d.endswith(".") for d in demos) / len(demos) <= 0.7
    assert all(not arith_task.teacher_answer(a, op, b).endswith(".") for a, op, b in problems)
    paths = arith_task.write_dataset(str(tmp_path), n_train=10, n_test=2, teacher_period_rate=0.6, sft_copies=3)
    with open(paths["sft"], encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    assert len(rows) == 30 and len({r["prompt"][0]["content"] for r in rows}) == 10
