"""What a user does right after `pip install verl-cpp`, run by tests/install/run_install_test.sh inside a fresh venv
that holds only the wheel and its dependencies (issue 22):

1. `import verl` loads the installed package (not the source tree) and the torch it was built against;
2. a tiny GRPO training run through the Python API (PPOTrainer + RLConfig + a Python reward function);
3. the same through verl's command line, `python -m verl.trainer.main_ppo` with verl's config keys.

The tiny random Qwen2 checkpoint and the toy prompts come from the trainer tests' helpers (plain Python).
Exits non-zero, naming the step, if anything is off.

    python tests/install/smoke.py WORKDIR
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "python", "trainer"))

from trainer_helpers import toy_overrides, write_rows, write_tiny_model  # noqa: E402


def fail(step: str, detail: str) -> None:
    print(f"smoke: {step} FAILED: {detail}", file=sys.stderr)
    sys.exit(1)


def check_import() -> None:
    import torch

    import verl

    source_package = os.path.join(REPO, "python", "verl")
    if os.path.commonpath([os.path.abspath(verl.__file__), source_package]) == source_package:
        fail("import", f"verl imported from the source tree ({verl.__file__}), not from the installed wheel")
    if not os.path.abspath(verl.__file__).startswith(os.path.abspath(sys.prefix) + os.sep):
        fail("import", f"verl imported from {verl.__file__}, outside this venv ({sys.prefix})")
    print(f"smoke: import verl {verl.__version__} from {os.path.dirname(verl.__file__)}, torch {torch.__version__}")


def check_python_api(workdir: str, model_dir: str, train_file: str) -> None:
    from verl import PPOTrainer, RLConfig

    calls = []

    def reward_fn(response: str, ground_truth: str) -> float:
        calls.append(response)
        return float(response.strip() == ground_truth)

    out = os.path.join(workdir, "api")
    overrides = toy_overrides(model_dir, out, "grpo", 2)
    os.environ["VERL_FILE_LOGGER_ROOT"] = out
    trainer = PPOTrainer(config=RLConfig(overrides=[*overrides, f"data.train_files={train_file}"]), reward_fn=reward_fn)
    try:
        trainer.fit()
    finally:
        del os.environ["VERL_FILE_LOGGER_ROOT"]
    # 2 steps x 4 prompts x n=4 responses, each scored once.
    if len(calls) != 2 * 4 * 4:
        fail("python api", f"the reward function ran {len(calls)} times, expected 32")
    with open(os.path.join(out, "proj", "exp.jsonl")) as f:
        records = [json.loads(line) for line in f if line.strip()]
    if len(records) != 2:
        fail("python api", f"{len(records)} metric records, expected 2")
    last = records[-1]
    metrics = last["data"]
    for key in ("actor/pg_loss", "critic/score/mean", "response_length/mean"):
        if key not in metrics or not math.isfinite(float(metrics[key])):
            fail("python api", f"metric {key} missing or not finite in {sorted(metrics)}")
    print(f"smoke: Python API: 2 GRPO steps, pg_loss {float(metrics['actor/pg_loss']):.4f}")


def check_cli(workdir: str, model_dir: str, train_file: str) -> None:
    out = os.path.join(workdir, "cli")
    os.makedirs(out, exist_ok=True)
    scorer = os.path.join(out, "score.py")
    with open(scorer, "w") as f:
        f.write("def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n"
                "    return float(solution_str.strip() == ground_truth)\n")
    overrides = [*toy_overrides(model_dir, out, "grpo", 2), f"data.train_files={train_file}",
                 f"custom_reward_function.path={scorer}", "custom_reward_function.name=compute_score",
                 "trainer.save_freq=2"]
    result = subprocess.run([sys.executable, "-m", "verl.trainer.main_ppo", *overrides], cwd=out,
                            capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        fail("cli", f"main_ppo exited {result.returncode}:\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}")
    with open(os.path.join(out, "proj", "exp.jsonl")) as f:
        records = [json.loads(line) for line in f if line.strip()]
    if len(records) != 2:
        fail("cli", f"{len(records)} metric records in proj/exp.jsonl, expected 2")
    checkpoint = os.path.join(out, "ckpt", "global_step_2")
    if not os.path.isdir(checkpoint):
        fail("cli", f"no checkpoint at {checkpoint}")
    print("smoke: CLI: python -m verl.trainer.main_ppo, 2 GRPO steps, metrics logged, checkpoint written")


def main() -> int:
    workdir = os.path.abspath(sys.argv[1])
    os.makedirs(workdir, exist_ok=True)
    check_import()
    model_dir = write_tiny_model(os.path.join(workdir, "tiny_qwen2"))
    train_file = write_rows(os.path.join(workdir, "train.jsonl"), 16)
    check_python_api(workdir, model_dir, train_file)
    check_cli(workdir, model_dir, train_file)
    with open(os.path.join(workdir, "smoke.json"), "w") as f:
        json.dump({"ok": True}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
