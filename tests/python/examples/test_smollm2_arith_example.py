"""examples/smollm2_arith: the pieces the run depends on, checked on their own (the run's numbers are in its README).

The held-out and training splits are disjoint, cover the task and depend only on the seed; the rows are verl's RL
schema and render, with SmolLM2's own chat template, within the run's prompt length; the reward on known responses;
the command line run.py hands to ``python -m verl.trainer.main_ppo`` is valid verl config that sets what the README
says, and its ``custom_reward_function`` loads the task's ``compute_score`` from the file the line names."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys

import pytest

EXAMPLE_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "smollm2_arith")
sys.path.insert(0, EXAMPLE_DIR)
import mental_arith  # noqa: E402
# Loaded under its own name: several examples have a run.py, and the first "import run" of a pytest process
# would shadow the others.
run = importlib.util.module_from_spec(
    _spec := importlib.util.spec_from_file_location("smollm2_arith_run", os.path.join(EXAMPLE_DIR, "run.py")))
sys.modules["smollm2_arith_run"] = run
_spec.loader.exec_module(run)

from verl.config import load_config  # noqa: E402
from verl.trainer.ppo.reward import get_custom_reward_fn  # noqa: E402


def test_splits_are_disjoint_cover_the_task_and_follow_the_seed():
    train, test = mental_arith.split_problems(200, seed=0)
    assert len(test) == 200 and len(train) == mental_arith.N_PROBLEMS - 200 == 520
    assert not set(train) & set(test)
    assert set(train) | set(test) == set(mental_arith.all_problems())
    assert len(set(mental_arith.all_problems())) == mental_arith.N_PROBLEMS == 720
    assert mental_arith.split_problems(200, seed=0) == (train, test)  # deterministic
    assert mental_arith.split_problems(200, seed=1)[1] != test
    assert mental_arith.split_problems(200, seed=0, n_train=10)[0] == train[:10]
    with pytest.raises(ValueError, match="n_train"):
        mental_arith.split_problems(200, n_train=521)


def test_answers_are_never_negative():
    for a, op, b in mental_arith.all_problems():
        assert mental_arith.answer(a, op, b) == (a + b if op == "plus" else a - b) > 0


def test_rows_are_verls_schema(tmp_path):
    paths = mental_arith.write_dataset(str(tmp_path), n_test=20, seed=3)
    test = mental_arith.read_rows(paths["test"])
    train = mental_arith.read_rows(paths["train"])
    assert len(test) == 20 and len(train) == 700
    row = test[0]
    assert sorted(row) == ["ability", "data_source", "extra_info", "prompt", "reward_model"]
    a, op, b = row["extra_info"]["a"], row["extra_info"]["op"], row["extra_info"]["b"]
    assert row["prompt"] == [{"role": "user", "content": f"What is {a} {op} {b}? Reply with only the number."}]
    assert row["reward_model"] == {"style": "rule", "ground_truth": str(mental_arith.answer(a, op, b))}
    assert row["data_source"] == "mental_arith" and row["extra_info"]["split"] == "test"
    assert [r["extra_info"]["index"] for r in train] == list(range(700))
    key = lambda r: (r["extra_info"]["a"], r["extra_info"]["op"], r["extra_info"]["b"])  # noqa: E731
    assert not {key(r) for r in train} & {key(r) for r in test}


def test_prompts_fit_the_prompt_length_with_smollm2s_template(smollm2_dir):
    import verl

    tokenizer = verl.load_tokenizer(smollm2_dir)
    lengths = [len(tokenizer.apply_chat_template([{"role": "user", "content": mental_arith.question(a, op, b)}],
                                                 add_generation_prompt=True, tokenize=True))
               for a, op, b in mental_arith.all_problems()]
    assert max(lengths) <= run.PROMPT_LENGTH
    text = tokenizer.apply_chat_template([{"role": "user", "content": "What is 37 minus 8?"}],
                                         add_generation_prompt=True, tokenize=False)
    assert text.startswith("<|im_start|>system\n")  # the model's default system prompt stays in


@pytest.mark.parametrize("response, acc, exact", [
    ("29", 1.0, 1.0),
    ("29.", 1.0, 1.0),
    (" 29\n", 1.0, 1.0),
    ("37 minus 8 equals 29.", 1.0, 0.0),  # the last integer is the answer
    ("37 - 8 = 29", 1.0, 0.0),
    ("29 is 37 minus 8.", 0.0, 0.0),  # ... so this one ends on 8
    ("37 minus 8 equals 28.", 0.0, 0.0),
    ("The answer is twenty-nine.", 0.0, 0.0),  # no integer
    ("", 0.0, 0.0),
    ("290", 0.0, 0.0),
    ("-29", 0.0, 0.0),
])
def test_reward_on_known_responses(response, acc, exact):
    assert mental_arith.compute_score("mental_arith", response, "29") == {"score": acc, "acc": acc, "exact": exact}


def args(**overrides) -> argparse.Namespace:
    return run.parse_args([f"--{k.replace('_', '-')}={v}" for k, v in overrides.items()])


def test_cli_command_is_valid_verl_config(tmp_path):
    data = {"train": str(tmp_path / "train.jsonl"), "test": str(tmp_path / "test.jsonl")}
    command = run.grpo_command(args(steps=7, lr=3e-5, seed=4), "/models/smollm2", data, str(tmp_path / "ckpt"))
    assert command[1:3] == ["-m", "verl.trainer.main_ppo"]
    overrides = command[3:]
    assert all("=" in o and not o.startswith(("+", "~")) for o in overrides)  # verl's existing keys only
    config = load_config(overrides=overrides)  # unknown keys / bad values raise verl.ConfigError
    default_dtype = load_config().get("actor_rollout_ref.actor.fsdp_config.dtype")
    expected = {"algorithm.adv_estimator": "grpo", "actor_rollout_ref.rollout.n": 8, "data.train_batch_size": 8,
                "actor_rollout_ref.actor.ppo_mini_batch_size": 8, "actor_rollout_ref.actor.optim.lr": 3e-5,
                "actor_rollout_ref.actor.use_kl_loss": False, "data.max_prompt_length": 64,
                "data.max_response_length": 16, "data.train_files": data["train"], "data.val_files": data["test"],
                "actor_rollout_ref.model.path": "/models/smollm2", "trainer.total_training_steps": 7,
                "trainer.save_freq": 7, "trainer.test_freq": 5, "trainer.val_before_train": True,
                "data.seed": 4, "actor_rollout_ref.rollout.seed": 4, "trainer.device": "cpu",
                "trainer.default_local_dir": str(tmp_path / "ckpt"),
                # no dtype pinned: verl's default (auto)
                "actor_rollout_ref.actor.fsdp_config.dtype": default_dtype}
    assert {key: config.get(key) for key in expected} == expected
    # the reward the line names is the task's compute_score, loaded from the example's file
    reward = get_custom_reward_fn(config)
    assert reward.fn.__name__ == "compute_score"
    assert os.path.samefile(reward.fn.__code__.co_filename, os.path.join(EXAMPLE_DIR, "mental_arith.py"))
    assert reward.fn("mental_arith", "37 minus 8 equals 29.", "29") == {"score": 1.0, "acc": 1.0, "exact": 0.0}


def test_quick_and_argument_checks(capsys):
    quick = run.parse_args(["--quick"])
    assert (quick.steps, quick.n_test, quick.samples, quick.test_freq) == (2, 16, 2, 1)
    for bad, message in ((["--n", "1"], "--n must be >= 2"), (["--steps", "0"], "--steps must be >= 1"),
                         (["--n-test", "720"], "--n-test must be in 1..719")):
        with pytest.raises(SystemExit):
            run.parse_args(bad)
        assert message in capsys.readouterr().err


def test_portable_command_names_no_local_directory():
    command = ["/venv/bin/python", "-m", "verl.trainer.main_ppo", "data.train_files=/w/data/train.jsonl",
               "actor_rollout_ref.model.path=/m/SmolLM2", "custom_reward_function.path=/r/ex/mental_arith.py"]
    assert run.portable(command, {"/w": "<workdir>", "/m/SmolLM2": "<model>", "/r/ex": "examples/x"}) == [
        "python", "-m", "verl.trainer.main_ppo", "data.train_files=<workdir>/data/train.jsonl",
        "actor_rollout_ref.model.path=<model>", "custom_reward_function.path=examples/x/mental_arith.py"]


def committed_summary() -> dict:
    with open(os.path.join(EXAMPLE_DIR, "results", "summary.json"), encoding="utf-8") as f:
        return json.load(f)


def read(*parts: str) -> str:
    with open(os.path.join(*parts), encoding="utf-8") as f:
        return f.read()


def test_committed_summary_matches_the_readme():
    """results/summary.json is the run the README reports: the held-out numbers the README prints are its own."""
    summary = committed_summary()
    readme = read(EXAMPLE_DIR, "README.md")
    for mode in ("greedy", "sampled"):
        for when in ("before", "after"):
            assert f"{summary[mode][when]['acc']:.1%}" in readme, (mode, when)
    assert summary["held_out"] == 200 and summary["args"]["steps"] == len(summary["train_reward_curve"])
    assert f"{summary['seconds']['total']:.0f} s" in readme
    for example in summary["examples"]:  # the before / after answers the README quotes are the run's
        assert repr(example["before"]) in readme and repr(example["after"]) in readme


def test_committed_run_is_the_default_command():
    """The README reports what ``run.py`` does with its defaults, not a tuned variant: the committed run's arguments
    are today's defaults (less where it wrote and how many threads), and its verl command line is the one run.py builds
    from them now -- a changed default or key fails here until the run is redone."""
    summary = committed_summary()
    defaults = vars(run.parse_args([]))
    ignored = {"workdir", "threads"}
    assert {k: v for k, v in summary["args"].items() if k not in ignored} == {
        k: v for k, v in defaults.items() if k not in ignored}
    work, model = "/work/dir", "/models/smollm2"
    data = {"train": f"{work}/data/train.jsonl", "test": f"{work}/data/test.jsonl"}
    command = run.grpo_command(run.parse_args([]), model, data, f"{work}/grpo")
    assert run.portable(command, {work: "<workdir>", model: f"<{run.MODEL_NAME}>",
                                  run.HERE: "examples/smollm2_arith"}) == summary["command"]
    readme = read(EXAMPLE_DIR, "README.md")
    for key in summary["command"][3:]:  # the README prints the whole command line
        assert key in readme, key
    # the picture and the summary the README shows are committed next to it
    assert os.path.getsize(os.path.join(EXAMPLE_DIR, "results", "smollm2_arith_curves.png")) > 10_000
    assert "results/smollm2_arith_curves.png" in readme


def test_make_demo_runs_this_example_and_keeps_the_arithmetic_demo():
    """`make demo` (the README's first command) is this example; the tiny-model arithmetic demo is `make demo-arith`."""
    root = os.path.join(EXAMPLE_DIR, "..", "..")
    makefile = read(root, "Makefile")
    recipes = {}
    for target in ("demo", "demo-arith"):
        head = makefile.index(f"\n{target}:")
        recipes[target] = makefile[head:].split("\n")[2]
    assert "examples/smollm2_arith/run.py" in recipes["demo"] and "$(DEMO_ARGS)" in recipes["demo"]
    assert "examples/arith/demo.py" in recipes["demo-arith"]
    phony = next(line for line in makefile.splitlines() if line.startswith(".PHONY:")).split()
    assert "demo" in phony and "demo-arith" in phony
    assert "make demo-arith" in read(root, "README.md")


def test_evaluate_scores_greedy_and_sampled_answers(smollm2_dir):
    """The before / after evaluation on a few held-out rows: one greedy and ``samples`` sampled answers each, scored
    by the reward, the sampled ones reproducible from the seed."""
    import torch

    _, test = mental_arith.split_problems(200, seed=0)
    rows = [mental_arith.rl_row(a, op, b, "test", i) for i, (a, op, b) in enumerate(test[:4])]
    first = run.evaluate(smollm2_dir, rows, samples=2, seed=0, dtype=torch.float32)
    assert len(first["greedy_texts"]) == 4 and 0 < first["mean_greedy_tokens"] <= run.RESPONSE_LENGTH
    for mode, n in (("greedy", 4), ("sampled", 8)):
        for key in ("acc", "exact"):
            assert first[mode][key] * n == round(first[mode][key] * n)  # a share of n scored answers
    rescored = sum(mental_arith.compute_score("mental_arith", text, row["reward_model"]["ground_truth"])["acc"]
                   for text, row in zip(first["greedy_texts"], rows)) / 4
    assert first["greedy"]["acc"] == rescored
    assert run.evaluate(smollm2_dir, rows, samples=2, seed=0, dtype=torch.float32) == first


def test_eval_dtype_is_the_trainers_by_default():
    import torch

    from verl import _C

    assert run.parse_args([]).eval_dtype == "auto"
    assert run.eval_dtype("float32") is torch.float32 and run.eval_dtype("bfloat16") is torch.bfloat16
    assert run.eval_dtype("auto") is (torch.bfloat16 if _C.workers.cpu_has_native_bf16_matmul() else torch.float32)
