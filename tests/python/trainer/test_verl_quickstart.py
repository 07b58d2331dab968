"""verl's own GSM8K command lines run unchanged (issue 16 item 5).

The lines are verl's, copied as verl publishes them (volcengine/verl at b178a3cd5): the PPO quickstart of
docs/start/quickstart.rst and the GRPO recipe examples/grpo_trainer/run_qwen2-7b.sh. Each runs through
``python -m verl.trainer.main_ppo`` with only these values replaced: the data files (a tiny GSM8K-format Parquet in
the schema of verl's examples/data_preprocess/gsm8k.py), the model path (a tiny local Qwen2 checkpoint) and
``trainer.n_gpus_per_node=1 trainer.nnodes=1 trainer.logger=console``. Each run is stopped once its first training
step has printed its metrics (the lines ask for 15 epochs: minutes on CPU, and one step shows the line trains).

``actor_rollout_ref.rollout.name=vllm`` selects verl-cpp's own engine, with one logged note naming the key. The
GRPO recipe also asks for a CPU-offloaded reference model -- on the CPU a no-op with one logged note, since the
parameters already live in host memory -- and for rollout tensor parallelism 2, which needs 2 ranks per rollout
replica while the line asks for one device (n_gpus_per_node=1 after our replacement): the line as written is refused
with a ConfigError naming that key and the ranks, and then runs with the minimal edit,
``rollout.tensor_model_parallel_size=1`` (verl itself needs one GPU per TP rank).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from trainer_helpers import write_tiny_model

pytestmark = pytest.mark.slow

PPO_QUICKSTART = """
   PYTHONUNBUFFERED=1 python3 -m verl.trainer.main_ppo \\
    data.train_files=$HOME/data/gsm8k/train.parquet \\
    data.val_files=$HOME/data/gsm8k/test.parquet \\
    data.train_batch_size=256 \\
    data.max_prompt_length=512 \\
    data.max_response_length=512 \\
    actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct \\
    actor_rollout_ref.actor.optim.lr=1e-6 \\
    actor_rollout_ref.actor.ppo_mini_batch_size=64 \\
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 \\
    actor_rollout_ref.rollout.name=vllm \\
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8 \\
    actor_rollout_ref.rollout.tensor_model_parallel_size=1 \\
    actor_rollout_ref.rollout.gpu_memory_utilization=0.4 \\
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4 \\
    critic.optim.lr=1e-5 \\
    critic.model.path=Qwen/Qwen2.5-0.5B-Instruct \\
    critic.ppo_micro_batch_size_per_gpu=4 \\
    algorithm.kl_ctrl.kl_coef=0.001 \\
    trainer.logger=console \\
    trainer.val_before_train=False \\
    trainer.n_gpus_per_node=1 \\
    trainer.nnodes=1 \\
    trainer.save_freq=10 \\
    trainer.test_freq=10 \\
    trainer.total_epochs=15 2>&1 | tee verl_demo.log
"""

GRPO_RECIPE = """
python3 -m verl.trainer.main_ppo \\
    algorithm.adv_estimator=grpo \\
    data.train_files=$HOME/data/gsm8k/train.parquet \\
    data.val_files=$HOME/data/gsm8k/test.parquet \\
    data.train_batch_size=1024 \\
    data.max_prompt_length=512 \\
    data.max_response_length=1024 \\
    data.filter_overlong_prompts=True \\
    data.truncation='error' \\
    actor_rollout_ref.model.path=Qwen/Qwen2-7B-Instruct \\
    actor_rollout_ref.actor.optim.lr=1e-6 \\
    actor_rollout_ref.model.use_remove_padding=True \\
    actor_rollout_ref.actor.ppo_mini_batch_size=256 \\
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=40 \\
    actor_rollout_ref.actor.use_kl_loss=True \\
    actor_rollout_ref.actor.kl_loss_coef=0.001 \\
    actor_rollout_ref.actor.kl_loss_type=low_var_kl \\
    actor_rollout_ref.actor.entropy_coeff=0 \\
    actor_rollout_ref.model.enable_gradient_checkpointing=True \\
    actor_rollout_ref.actor.fsdp_config.param_offload=False \\
    actor_rollout_ref.actor.fsdp_config.optimizer_offload=False \\
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=40 \\
    actor_rollout_ref.rollout.tensor_model_parallel_size=2 \\
    actor_rollout_ref.rollout.name=vllm \\
    actor_rollout_ref.rollout.gpu_memory_utilization=0.6 \\
    actor_rollout_ref.rollout.n=5 \\
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=40 \\
    actor_rollout_ref.ref.fsdp_config.param_offload=True \\
    algorithm.use_kl_in_reward=False \\
    trainer.critic_warmup=0 \\
    trainer.logger='["console","wandb"]' \\
    trainer.project_name='verl_grpo_example_gsm8k' \\
    trainer.experiment_name='qwen2_7b_function_rm' \\
    trainer.n_gpus_per_node=8 \\
    trainer.nnodes=1 \\
    trainer.save_freq=20 \\
    trainer.test_freq=5 \\
    trainer.total_epochs=15 $@
"""

# The minimal edit the GRPO recipe needs on one device (the ConfigError below names exactly these keys).
GRPO_ONE_DEVICE_EDIT = {"actor_rollout_ref.rollout.tensor_model_parallel_size": "1"}

# verl's examples/data_preprocess/gsm8k.py appends this instruction to each question.
INSTRUCTION = 'Let\'s think step by step and output the final answer after "####".'
PROBLEMS = [
    ("Ann has 3 apples and buys 4 more. How many apples?", "3 + 4 = 7\n#### 7", "7"),
    ("A box holds 6 pens. How many pens in 2 boxes?", "6 * 2 = 12\n#### 12", "12"),
    ("Tom had 10 coins and spent 3. How many are left?", "10 - 3 = 7\n#### 7", "7"),
    ("Each of 5 cats has 4 legs. How many legs?", "5 * 4 = 20\n#### 20", "20"),
    ("Sue reads 8 pages a day. Pages in 3 days?", "8 * 3 = 24\n#### 24", "24"),
    ("A bus has 9 seats in use and 6 free. Seats?", "9 + 6 = 15\n#### 15", "15"),
    ("Bob splits 18 candies among 3 kids. Each gets?", "18 / 3 = 6\n#### 6", "6"),
    ("A farm has 7 cows and 2 horses. Animals?", "7 + 2 = 9\n#### 9", "9"),
]


def write_gsm8k_parquet(path: str, split: str, problems: list[tuple[str, str, str]]) -> str:
    rows = [{"data_source": "openai/gsm8k",
             "prompt": [{"role": "user", "content": question + " " + INSTRUCTION}],
             "ability": "math",
             "reward_model": {"style": "rule", "ground_truth": truth},
             "extra_info": {"split": split, "index": i, "answer": answer, "question": question}}
            for i, (question, answer, truth) in enumerate(problems)]
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


@pytest.fixture(scope="module")
def gsm8k_setup(tmp_path_factory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("quickstart")
    # 512 prompt + 1024 response positions: the recipes' lengths need the model to reach that far.
    model = write_tiny_model(str(root / "model"), max_position_embeddings=2048)
    return {"model": model, "train": write_gsm8k_parquet(str(root / "train.parquet"), "train", PROBLEMS),
            "test": write_gsm8k_parquet(str(root / "test.parquet"), "test", PROBLEMS[:4])}


def command_overrides(script: str, setup: dict[str, str], edits: dict[str, str] | None = None) -> list[str]:
    """The key=value arguments of a verl command line, with the replacements the module docstring lists."""
    words = shlex.split(script.replace("\\\n", " "))
    words = words[words.index("verl.trainer.main_ppo") + 1:]
    words = words[:next((i for i, w in enumerate(words) if w in ("2>&1", "$@", "|")), len(words))]
    replace = {"data.train_files": setup["train"], "data.val_files": setup["test"],
               "actor_rollout_ref.model.path": setup["model"], "critic.model.path": setup["model"],
               "trainer.n_gpus_per_node": "1", "trainer.nnodes": "1", "trainer.logger": "console", **(edits or {})}
    out = []
    for word in words:
        key, _, value = word.partition("=")
        out.append(f"{key}={replace[key]}" if key in replace else word)
    assert all("=" in w for w in out), out
    return out


def run_main_ppo(overrides: list[str], cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "verl.trainer.main_ppo", *overrides], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, "PYTHONUNBUFFERED": "1"}, timeout=600)


def train_until_first_step(overrides: list[str], cwd) -> tuple[str, str]:
    """Runs the command line until its first training step's metrics line is printed, then stops it (the lines ask
    for 15 epochs; one step shows the line trains). Returns that line and everything on stderr up to then."""
    stderr_path = os.path.join(cwd, "stderr.txt")
    with open(stderr_path, "w") as stderr:
        proc = subprocess.Popen([sys.executable, "-m", "verl.trainer.main_ppo", *overrides], stdout=subprocess.PIPE,
                                stderr=stderr, text=True, cwd=cwd, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        first_step, seen = None, []
        try:
            for line in proc.stdout:
                seen.append(line)
                if re.match(r"step 1 \|", line):
                    first_step = line.strip()
                    break
        finally:
            proc.kill()
            proc.wait(timeout=60)
            proc.stdout.close()
    with open(stderr_path) as f:
        err = f.read()
    assert first_step is not None, f"no step line; exit {proc.returncode}\n{''.join(seen)[-3000:]}\n{err[-3000:]}"
    return first_step, err


def test_command_lines_keep_verls_values_except_the_replaced_ones(gsm8k_setup):
    """The parsing above changes nothing else: every other argument is verl's, word for word."""
    ppo = command_overrides(PPO_QUICKSTART, gsm8k_setup)
    assert len(ppo) == 25 and "actor_rollout_ref.rollout.name=vllm" in ppo and "trainer.total_epochs=15" in ppo
    assert "actor_rollout_ref.rollout.gpu_memory_utilization=0.4" in ppo and "trainer.logger=console" in ppo
    grpo = command_overrides(GRPO_RECIPE, gsm8k_setup)
    assert len(grpo) == 37 and "data.truncation=error" in grpo and "trainer.n_gpus_per_node=1" in grpo
    assert "actor_rollout_ref.ref.fsdp_config.param_offload=True" in grpo


def metrics_of(step_line: str) -> dict[str, float]:
    """The console backend's step line (``step 1 | reward 0.000 | resp_len 175.0 | pg_loss ... | step_s 9.57``)."""
    fields = [field.split() for field in step_line.split("|")[1:]]
    return {name: float(value) for name, value in fields}


def test_ppo_quickstart_runs_unchanged(gsm8k_setup, tmp_path):
    step, err = train_until_first_step(command_overrides(PPO_QUICKSTART, gsm8k_setup), str(tmp_path))
    # rollout.name=vllm: one note naming the key; the run uses verl-cpp's engine.
    assert err.count("actor_rollout_ref.rollout.name=vllm") == 1, err[-4000:]
    # train_batch_size 256 and ppo_mini_batch_size 64 are clipped to the 8 training rows, with a note each.
    assert "data.train_batch_size=8" in err and "actor_rollout_ref.actor.ppo_mini_batch_size=8" in err
    metrics = metrics_of(step)
    assert {"reward", "resp_len", "pg_loss", "vf_loss", "entropy"} <= set(metrics), step  # PPO: a critic too
    assert 0.0 <= metrics["reward"] <= 1.0 and 0 < metrics["resp_len"] <= 512 and metrics["vf_loss"] > 0


def test_grpo_recipe_as_written_is_refused_naming_the_keys_to_drop(gsm8k_setup, tmp_path):
    result = run_main_ppo(command_overrides(GRPO_RECIPE, gsm8k_setup), tmp_path)
    assert result.returncode == 2, result.stderr[-4000:]
    assert "settings are refused" not in result.stderr, result.stderr[-4000:]  # one key, named on its own
    assert ("actor_rollout_ref.rollout.tensor_model_parallel_size = 2 does not divide the job's 1 ranks"
            in result.stderr), result.stderr[-4000:]
    assert "actor/pg_loss" not in result.stdout


def test_grpo_recipe_runs_with_the_one_device_edit(gsm8k_setup, tmp_path):
    step, err = train_until_first_step(command_overrides(GRPO_RECIPE, gsm8k_setup, GRPO_ONE_DEVICE_EDIT),
                                       str(tmp_path))
    assert err.count("actor_rollout_ref.rollout.name=vllm") == 1, err[-4000:]
    # ref.fsdp_config.param_offload=True, as written: on the CPU a no-op with one note
    assert err.count("actor_rollout_ref.ref.fsdp_config.param_offload=true: the model is on the CPU") == 1, err[-4000:]
    metrics = metrics_of(step)
    assert {"reward", "resp_len", "pg_loss", "kl"} <= set(metrics) and "vf_loss" not in metrics, step  # no critic
    assert 0.0 <= metrics["reward"] <= 1.0 and 0 < metrics["resp_len"] <= 1024
