"""trainer.rollout_data_dir / validation_data_dir / log_val_generations: verl's JSONL dumps of generations
(``<dir>/<step>.jsonl``, one object per sample with input, output, gts, score, step and the reward's extra info)
and the validation samples shown to the trackers."""

from __future__ import annotations

import json

from verl import PPOTrainer, RLConfig

from trainer_helpers import toy_overrides


def digits(data_source, solution_str, ground_truth, extra_info=None):
    """The share of digits in the response, with an extra-info field as verl's dict scores carry."""
    share = sum(c.isdigit() for c in solution_str) / max(len(solution_str), 1)
    return {"score": share, "length": len(solution_str)}


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def test_rollout_and_validation_dumps_as_verl_writes_them(tiny_model_dir, toy_data, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    rollout_dir, val_dir = tmp_path / "rollouts", tmp_path / "val"
    cfg = RLConfig(overrides=[*toy_overrides(tiny_model_dir, str(tmp_path), "grpo", 2),
                              f"data.train_files={toy_data['train']}", f"data.val_files={toy_data['test']}",
                              "trainer.val_before_train=true", "trainer.test_freq=2",
                              "actor_rollout_ref.rollout.val_kwargs.n=2", f"trainer.rollout_data_dir={rollout_dir}",
                              f"trainer.validation_data_dir={val_dir}", "trainer.log_val_generations=3"])
    trainer = PPOTrainer(config=cfg, reward_fn=digits)
    trainer.fit()

    assert sorted(p.name for p in rollout_dir.iterdir()) == ["1.jsonl", "2.jsonl"]
    for step in (1, 2):
        rows = read_jsonl(rollout_dir / f"{step}.jsonl")
        assert len(rows) == 4 * 4  # train_batch_size x rollout.n
        for row in rows:
            assert {"input", "output", "gts", "score", "step", "length"} <= set(row)
            assert row["step"] == step and isinstance(row["step"], int)
            assert row["input"].startswith("<|im_start|>") is False  # special tokens skipped, as verl decodes
            assert "Compute" in row["input"]
            a, b = row["input"].split("Compute ")[1].split(".")[0].split("+")
            assert row["gts"] == str(int(a) + int(b))  # the row's ground truth
            assert row["score"] == digits(None, row["output"], None)["score"]
            assert row["length"] == len(row["output"])

    assert sorted(p.name for p in val_dir.iterdir()) == ["0.jsonl", "2.jsonl"]  # before training, test_freq=2
    rows = read_jsonl(val_dir / "2.jsonl")
    with open(toy_data["test"], encoding="utf-8") as f:
        n_val = sum(1 for _ in f)
    assert len(rows) == n_val * 2  # val_kwargs.n
    assert {"input", "output", "gts", "score", "step", "reward", "length"} <= set(rows[0])
    assert all(row["reward"] == row["score"] and row["step"] == 2 for row in rows)

    out = capsys.readouterr().out
    assert out.count("[val generation 1/3, step 0]") == 1 and out.count("[val generation 3/3, step 2]") == 1
    assert "Dumped generations to" in out


def test_no_dumps_by_default(tiny_model_dir, toy_data, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    cfg = RLConfig(overrides=[*toy_overrides(tiny_model_dir, str(tmp_path), "grpo", 1),
                              f"data.train_files={toy_data['train']}", f"data.val_files={toy_data['test']}",
                              "trainer.val_before_train=true"])
    PPOTrainer(config=cfg, reward_fn=digits).fit()
    out = capsys.readouterr().out
    assert "Dumped generations" not in out and "[val generation" not in out


def test_val_generations_are_verls_fixed_sample():
    """The same prompts at every validation: sorted by input, shuffled with RandomState(42), the first N."""
    from verl.utils.tracking import select_val_generations

    inputs = [f"q{i}" for i in range(10)]
    first = select_val_generations(inputs, [f"a{i}" for i in range(10)], list(range(10)), 4)
    again = select_val_generations(list(reversed(inputs)), [f"a{i}" for i in reversed(range(10))],
                                   list(reversed(range(10))), 4)
    assert first == again and len(first) == 4
    assert all(sample[1] == "a" + sample[0][1:] for sample in first)
