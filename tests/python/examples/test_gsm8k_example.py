"""examples/gsm8k: preprocessing gives verl's schema exactly (from the HF Parquet files and from JSONL), and the
GRPO recipe script's keys are valid, carry the recipe's values and train end to end (tiny random model, CPU)."""

from __future__ import annotations

import json
import math
import os
import stat
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import verl
from verl.config import load_config
from verl.utils.tracking import read_metrics

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
GSM8K_DIR = os.path.join(ROOT, "examples", "gsm8k")
PREPROCESS = os.path.join(GSM8K_DIR, "preprocess.py")
RECIPE = os.path.join(GSM8K_DIR, "run_qwen2.5-0.5b_grpo.sh")
sys.path.insert(0, GSM8K_DIR)
sys.path.insert(0, os.path.join(ROOT, "tests", "python", "trainer"))
import preprocess  # noqa: E402
from trainer_helpers import write_tiny_model  # noqa: E402

SUFFIX = ' Let\'s think step by step and output the final answer after "####".'

# GSM8K-format rows (question, reference solution with <<calculator>> annotations, final answer after ####) and
# the ground truth verl extracts from each: the number after "#### " with thousands separators removed.
RAW_TRAIN = [
    ("Ann has 3 boxes of 24 pens. How many pens?", "3 boxes * 24 = <<3*24=72>>72 pens.\n#### 72", "72"),
    ("A car costs $1,200 and a bike $34. Total?", "1,200 + 34 = <<1200+34=1234>>1,234\n#### 1,234", "1234"),
    ("It is 2 degrees and drops 7. Now?", "2 - 7 = <<2-7=-5>>-5\n#### -5", "-5"),
    ("Split 7 cakes in 2. Each?", "7 / 2 = <<7/2=3.5>>3.5\n#### 3.5", "3.5"),
]
RAW_TEST = [
    ("A city has 10 million people. Write it out.", "10 * 1,000,000 = 10,000,000\n#### 10,000,000", "10000000"),
    ("Tom reads 6 pages a day for 3 days. Pages?", "6 * 3 = <<6*3=18>>18\n#### 18", "18"),
]


def expected_rows(raw: list[tuple[str, str, str]], split: str) -> list[dict]:
    return [{"data_source": "openai/gsm8k",
             "prompt": [{"role": "user", "content": question + SUFFIX}],
             "ability": "math",
             "reward_model": {"style": "rule", "ground_truth": truth},
             "extra_info": {"split": split, "index": i, "answer": answer, "question": question}}
            for i, (question, answer, truth) in enumerate(raw)]


def write_hf_parquet(path, raw) -> str:
    """The Hugging Face dataset's file layout: one row per problem, string columns question / answer."""
    table = pa.table({"question": [q for q, _, _ in raw], "answer": [a for _, a, _ in raw]})
    pq.write_table(table, str(path))
    return str(path)


def write_raw_jsonl(path, raw) -> str:
    """The original grade-school-math JSONL layout."""
    with open(path, "w", encoding="utf-8") as f:
        for question, answer, _ in raw:
            f.write(json.dumps({"question": question, "answer": answer}) + "\n")
    return str(path)


def read_jsonl(path) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


@pytest.fixture(scope="module")
def gsm8k_data(tmp_path_factory) -> str:
    """train.parquet / test.parquet (and .jsonl) preprocessed from the HF-layout Parquet files by the CLI."""
    raw = tmp_path_factory.mktemp("gsm8k_raw")
    out = tmp_path_factory.mktemp("gsm8k")
    train = write_hf_parquet(raw / "train.parquet", RAW_TRAIN)
    test = write_hf_parquet(raw / "test.parquet", RAW_TEST)
    result = subprocess.run([sys.executable, PREPROCESS, "--train-file", train, "--test-file", test,
                             "--local_save_dir", str(out), "--format", "both"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "train: 4 rows" in result.stdout and "test: 2 rows" in result.stdout
    return str(out)


# -- preprocessing ------------------------------------------------------------------------------------------------
def test_parquet_input_gives_verl_schema_exactly(gsm8k_data):
    for split, raw in (("train", RAW_TRAIN), ("test", RAW_TEST)):
        table = pq.read_table(os.path.join(gsm8k_data, f"{split}.parquet"))
        assert table.column_names == ["data_source", "prompt", "ability", "reward_model", "extra_info"]
        assert table.schema.field("extra_info").type.field("index").type == pa.int64()
        assert table.to_pylist() == expected_rows(raw, split)
        assert read_jsonl(os.path.join(gsm8k_data, f"{split}.jsonl")) == expected_rows(raw, split)


def test_jsonl_input_gives_the_same_rows(tmp_path, gsm8k_data):
    train = write_raw_jsonl(tmp_path / "train.jsonl", RAW_TRAIN)
    test = write_raw_jsonl(tmp_path / "test.jsonl", RAW_TEST)
    assert preprocess.main(["--train-file", train, "--test-file", test, "--local_save_dir", str(tmp_path / "out"),
                            "--format", "jsonl"]) == 0
    assert read_jsonl(tmp_path / "out" / "train.jsonl") == expected_rows(RAW_TRAIN, "train")
    assert read_jsonl(tmp_path / "out" / "test.jsonl") == expected_rows(RAW_TEST, "test")
    assert not (tmp_path / "out" / "train.parquet").exists()


def test_ground_truth_extraction_follows_verl():
    assert preprocess.extract_solution("so 1,234 in all\n#### 1,234") == "1234"
    assert preprocess.extract_solution("#### -0.5") == "-0.5"
    assert preprocess.extract_solution("#### 7 and later #### 9") == "7"  # the first one, as verl's re.search
    assert preprocess.extract_solution("####72") is None  # verl needs the space after ####
    assert preprocess.extract_solution("the answer is 72") is None


def test_preprocessed_rows_score_with_verls_gsm8k_rule(gsm8k_data):
    from verl.utils.reward_score import default_compute_score

    for row in read_jsonl(os.path.join(gsm8k_data, "train.jsonl")):
        truth = row["reward_model"]["ground_truth"]
        # the reference solution itself is a correct response; another number is not
        assert default_compute_score(row["data_source"], row["extra_info"]["answer"], truth) == 1.0
        assert default_compute_score(row["data_source"], "... #### 99999", truth) == 0.0


def test_bad_rows_are_data_errors_naming_file_and_row(tmp_path):
    jsonl = tmp_path / "bad.jsonl"
    jsonl.write_text('{"question": "q1", "answer": "#### 1"}\n\n{"question": "q2", "answer": "no final answer"}\n')
    with pytest.raises(verl.DataError, match=r"bad\.jsonl:3: 'answer' has no final answer '#### <number>'"):
        preprocess.preprocess_file(str(jsonl), "train")

    jsonl.write_text('{"question": "q1", "answer": "#### 1"}\n{"question": "q2", "answer": "#### 2"\n')
    with pytest.raises(verl.DataError, match=r"bad\.jsonl:2: invalid JSON"):
        preprocess.preprocess_file(str(jsonl), "train")

    parquet = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"question": ["q1", "q2"], "answer": ["#### 1", None]}), str(parquet))
    with pytest.raises(verl.DataError, match=r"bad\.parquet: row 2: 'answer' must be a non-empty string"):
        preprocess.preprocess_file(str(parquet), "test")

    pq.write_table(pa.table({"problem": ["q1"], "solution": ["#### 1"]}), str(parquet))
    with pytest.raises(verl.DataError, match=r"bad\.parquet: no column \['question', 'answer'\]"):
        preprocess.preprocess_file(str(parquet), "test")

    csv = tmp_path / "train.csv"
    csv.write_text("question,answer\nq1,#### 1\n")
    with pytest.raises(verl.DataError, match=r"train\.csv: unsupported file type"):
        preprocess.preprocess_file(str(csv), "train")
    with pytest.raises(verl.DataError, match="GSM8K file not found"):
        preprocess.preprocess_file(str(tmp_path / "missing.parquet"), "train")


def test_cli_reports_bad_input_and_missing_datasets_library(tmp_path, capsys, monkeypatch):
    bad = tmp_path / "train.jsonl"
    bad.write_text('{"question": "", "answer": "#### 1"}\n')
    assert preprocess.main(["--train-file", str(bad), "--local_save_dir", str(tmp_path / "out")]) == 1
    assert f"{bad}:1: 'question' must be a non-empty string" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()  # nothing is written when a split fails

    monkeypatch.setitem(sys.modules, "datasets", None)  # import datasets -> ImportError
    assert preprocess.main(["--hf", "--local_save_dir", str(tmp_path / "out")]) == 1
    assert "--hf needs the 'datasets' library" in capsys.readouterr().err


# -- the recipe script --------------------------------------------------------------------------------------------
def recipe_overrides(tmp_path) -> list[str]:
    """The overrides the script passes to main_ppo (bash expands them), read with a stand-in interpreter."""
    shim = tmp_path / "argv_python"
    shim.write_text(f"#!/bin/sh\nexec {sys.executable} -c 'import json, sys; print(json.dumps(sys.argv[1:]))' \"$@\"\n")
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    env = {**os.environ, "PYTHON": str(shim), "DATA_DIR": "/data/gsm8k", "MODEL_PATH": "/models/qwen"}
    result = subprocess.run(["bash", RECIPE], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    argv = json.loads(result.stdout)
    assert argv[:2] == ["-m", "verl.trainer.main_ppo"]
    return argv[2:]


def _same(config_value, text: str) -> bool:
    if isinstance(config_value, bool):
        return text.lower() == str(config_value).lower()
    if isinstance(config_value, (int, float)):
        return float(text) == config_value
    if isinstance(config_value, list):
        return text.strip("[]").split(",") == [str(v) for v in config_value]
    return text == config_value


def test_recipe_keys_are_valid_and_set_the_recipe(tmp_path):
    overrides = recipe_overrides(tmp_path)
    config = load_config(overrides=overrides)  # unknown keys / bad values raise verl.ConfigError
    for override in overrides:
        key, _, value = override.partition("=")
        assert _same(config[key], value), (key, config[key], value)
    # verl's GRPO recipe for GSM8K (examples/grpo_trainer): the hyperparameters the README documents.
    expected = {"algorithm.adv_estimator": "grpo", "actor_rollout_ref.rollout.n": 5,
                "actor_rollout_ref.actor.optim.lr": 1e-6, "actor_rollout_ref.actor.use_kl_loss": True,
                "actor_rollout_ref.actor.kl_loss_type": "low_var_kl", "actor_rollout_ref.actor.kl_loss_coef": 0.001,
                "actor_rollout_ref.actor.entropy_coeff": 0, "algorithm.use_kl_in_reward": False,
                "data.max_prompt_length": 512, "data.max_response_length": 1024, "trainer.device": "cuda",
                "trainer.n_gpus_per_node": 1, "data.train_files": "/data/gsm8k/train.parquet",
                "data.val_files": "/data/gsm8k/test.parquet", "actor_rollout_ref.model.path": "/models/qwen",
                "actor_rollout_ref.rollout.prompt_length": 512, "actor_rollout_ref.rollout.response_length": 1024}
    assert {key: config[key] for key in expected} == expected


# Only sizes, device and output places differ from the recipe in CI; every algorithm key is the script's.
TINY_SIZES = ["data.train_batch_size=2", "data.max_response_length=16", "actor_rollout_ref.actor.ppo_mini_batch_size=2",
              "trainer.total_training_steps=2", "trainer.device=cpu"]


def test_recipe_trains_on_a_tiny_model(tmp_path, gsm8k_data):
    recipe_keys = {o.partition("=")[0] for o in recipe_overrides(tmp_path)}
    tiny_keys = {o.partition("=")[0] for o in TINY_SIZES}
    assert tiny_keys <= recipe_keys | {"trainer.total_training_steps"}
    assert not {k for k in tiny_keys if k.startswith("algorithm.") or "kl" in k or "optim" in k}

    model = write_tiny_model(str(tmp_path / "model"), max_position_embeddings=1024)  # the recipe's 512 + response
    metrics_path = tmp_path / "metrics.jsonl"
    env = {**os.environ, "PYTHON": sys.executable, "DATA_DIR": gsm8k_data, "MODEL_PATH": model,
           "VERL_FILE_LOGGER_PATH": str(metrics_path), "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.abspath(verl.__file__)))}
    result = subprocess.run(["bash", RECIPE, *TINY_SIZES, f"trainer.default_local_dir={tmp_path}/ckpt"],
                            capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert result.returncode == 0, result.stderr[-4000:]

    records = dict(read_metrics(metrics_path))
    assert sorted(records) == [0, 1, 2]
    for data in records.values():
        for key, value in data.items():
            assert math.isfinite(value), (key, value)
    train = [records[1], records[2]]
    for key in ("actor/pg_loss", "actor/kl_loss", "actor/entropy", "actor/grad_norm", "actor/lr", "critic/score/mean",
                "critic/advantages/mean", "response_length/mean", "prompt_length/mean", "timing_s/gen",
                "timing_s/ref", "timing_s/adv", "timing_s/update_actor", "timing_s/step", "perf/throughput"):
        assert all(key in data for data in train), key
    # The tiny sizes make one mini-batch of the whole batch: the update's own forward gives the old log-probs (the
    # recipe's 4 mini-batches of 32 prompts run the pass).
    assert not any("timing_s/old_log_prob" in data for data in train)
    assert all(data["actor/lr"] == pytest.approx(1e-6) and data["actor/kl_coef"] == pytest.approx(0.001)
               for data in train)
    assert all(0 < data["response_length/max"] <= 16 for data in train)  # the overridden max_response_length
    # validated before training (step 0) and at the last step; verl's GSM8K rule gives 0/1 rewards, so the mean
    # reward is the accuracy
    val_key = "val-core/openai/gsm8k/reward/mean@1"
    assert val_key in records[0] and val_key in records[2]
    assert all(0.0 <= records[step][val_key] <= 1.0 for step in (0, 2))
    assert (tmp_path / "ckpt" / "global_step_2" / "actor" / "config.json").exists()
