"""verl.SFTTrainer and verl.utils.dataset.SFTDataset on a tiny random Qwen2 with the arith demo's real BPE tokenizer:
loss masks (response + EOS only, the prompt rendered as the RL dataset renders it, chat rows), truncation modes,
bad rows naming file:line, val/loss against an independent computation, learning on a memorisable toy set, the
command line end to end into a checkpoint that verl.models and PPOTrainer use, resume == straight, crash
safety, config errors."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

import verl
from verl import SFTTrainer
from verl.utils.dataset import RLHFDataset, SFTDataset, collate_sft
from verl.utils.tracking import read_metrics

from trainer_helpers import check_ppo_takes_checkpoint, write_jsonl

EOS = "<|im_end|>"


def arith_rows(n: int, offset: int = 0) -> list[dict]:
    rows = []
    for i in range(n):
        a, b = (7 * i + 3 + offset) % 50, (11 * i + 5 + offset) % 50
        rows.append({"prompt": [{"role": "user", "content": f"Compute {a}+{b}."}], "response": str(a + b)})
    return rows


def sft_config(model_dir, out_dir, train_file, steps=None, extra=None) -> dict:
    config = {
        "model": {"path": model_dir, "enable_gradient_checkpointing": False},
        "data": {"train_files": train_file, "train_batch_size": 4, "micro_batch_size_per_gpu": 2,
                 "use_dynamic_bsz": False, "max_length": 64},
        "optim": {"lr": 1e-2, "lr_scheduler_type": "cosine", "lr_warmup_steps_ratio": 0.1},
        "trainer": {"default_local_dir": f"{out_dir}/ckpt", "logger": ["console"], "total_epochs": 3,
                    "project_name": "proj", "experiment_name": "sft", "device": "cpu"},
    }
    if steps is not None:
        config["trainer"]["total_training_steps"] = steps
    for key, value in (extra or {}).items():
        config[key] = value  # dotted keys beside the sections
    return config


# -- the dataset ------------------------------------------------------------------------------------------------
def test_prompt_response_rows_train_on_the_response_and_eos(tokenizer, tmp_path):
    rows = [{"prompt": "Compute 3+4.", "response": "7"},
            {"prompt": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Compute 12-5."}],
             "response": " 7 "}]
    ds = SFTDataset(write_jsonl(tmp_path / "sft.jsonl", rows), tokenizer, {"max_length": 64})
    eos = tokenizer.eos_token_id
    for i, (row, messages) in enumerate(zip(rows, ([{"role": "user", "content": "Compute 3+4."}], rows[1]["prompt"]))):
        prompt_text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        prompt_ids = tokenizer.encode(prompt_text, add_special_tokens=False)
        response_ids = tokenizer.encode(row["response"], add_special_tokens=False) + [eos]
        item = ds[i]
        assert item["input_ids"].tolist() == prompt_ids + response_ids
        assert item["loss_mask"].tolist() == [0] * len(prompt_ids) + [1] * len(response_ids)
        assert tokenizer.decode(item["input_ids"][item["loss_mask"].bool()].tolist()) == row["response"] + EOS
        assert prompt_text.endswith("<|im_start|>assistant\n")

    # the prompt tokens are the ones the RL dataset hands the rollout for the same messages
    rl_row = {"prompt": rows[1]["prompt"], "reward_model": {"ground_truth": "7"}}
    rl = RLHFDataset(write_jsonl(tmp_path / "rl.jsonl", [rl_row]), tokenizer, {"max_prompt_length": 64})
    n_prompt = int((ds[1]["loss_mask"] == 0).sum())
    assert ds[1]["input_ids"][:n_prompt].tolist() == rl[0]["raw_prompt_ids"]


def test_chat_rows_train_on_every_assistant_turn(tokenizer, tmp_path):
    messages = [{"role": "system", "content": "You add numbers."}, {"role": "user", "content": "Compute 1+2."},
                {"role": "assistant", "content": "3"}, {"role": "user", "content": "Compute 30+4."},
                {"role": "assistant", "content": "34"}]
    ds = SFTDataset(write_jsonl(tmp_path / "chat.jsonl", [{"messages": messages}]), tokenizer, {})
    item = ds[0]
    # the whole conversation as the template renders it, tokenized as one text
    full = tokenizer.apply_chat_template(messages, tokenize=False)
    assert item["input_ids"].tolist() == tokenizer.encode(full, add_special_tokens=False)
    targets = tokenizer.decode(item["input_ids"][item["loss_mask"].bool()].tolist())
    assert targets == f"3{EOS}\n34{EOS}\n"  # each assistant turn after its generation prompt
    context = tokenizer.decode(item["input_ids"][~item["loss_mask"].bool()].tolist())
    assert "Compute 30+4." in context and "You add numbers." in context
    assert context.count("<|im_start|>assistant\n") == 2


def test_truncation_modes(tokenizer, tmp_path):
    path = write_jsonl(tmp_path / "sft.jsonl", [{"prompt": "Compute 3+4.", "response": "7"},
                                                {"prompt": "Compute 12+30 and say it slowly.", "response": "42 42 42"}])
    full = SFTDataset(path, tokenizer, {"max_length": 512})
    n0, n1 = len(full[0]["input_ids"]), len(full[1]["input_ids"])
    limit = n0 + 2
    assert n1 > limit + 3
    with pytest.raises(verl.DataError, match=f"{path}:2: row has {n1} tokens, more than data.max_length={limit}"):
        SFTDataset(path, tokenizer, {"max_length": limit, "truncation": "error"})
    left = SFTDataset(path, tokenizer, {"max_length": limit, "truncation": "left"})
    assert torch.equal(left[0]["input_ids"], full[0]["input_ids"])  # short rows are untouched
    assert left[1]["input_ids"].tolist() == full[1]["input_ids"][-limit:].tolist()
    assert left[1]["loss_mask"].tolist() == full[1]["loss_mask"][-limit:].tolist()
    right_limit = n1 - 3  # cuts into the response, keeps some of it
    right = SFTDataset(path, tokenizer, {"max_length": right_limit, "truncation": "right"})
    assert right[1]["input_ids"].tolist() == full[1]["input_ids"][:right_limit].tolist()
    assert right[1]["loss_mask"].tolist() == full[1]["loss_mask"][:right_limit].tolist()
    assert right[1]["loss_mask"].sum() > 0
    # right truncation that leaves no response token is an error naming the row
    with pytest.raises(verl.DataError, match=f"{path}:2: no response token"):
        SFTDataset(path, tokenizer, {"max_length": int((full[1]["loss_mask"] == 0).sum()), "truncation": "right"})
    with pytest.raises(verl.ConfigError, match="data.truncation"):
        SFTDataset(path, tokenizer, {"truncation": "middle"})


@pytest.mark.parametrize("bad, message", [
    ('["not", "an", "object"]', "a row must be an object"),
    ('{"prompt": "Compute 1+1."}', "no 'response'"),
    ('{"response": "2"}', "no 'prompt'"),
    ('{"prompt": "Compute 1+1.", "response": 2}', "'response' must be a string"),
    ('{"prompt": [{"content": "hi"}], "response": "2"}', "'prompt' must be a non-empty list"),
    ('{"messages": [{"role": "user", "content": "hi"}]}', "no assistant turn"),
    ('{"question": "Compute 1+1."}', "neither 'messages'"),
    ('{"prompt": "Compute 1+1.", "response": "2"', "invalid JSON"),
])
def test_bad_rows_name_file_and_line(tokenizer, tmp_path, bad, message):
    path = write_jsonl(tmp_path / "bad.jsonl", [{"prompt": "Compute 1+1.", "response": "2"}, bad])
    with pytest.raises(verl.DataError, match=f"{path}:2: .*{message}"):
        SFTDataset(path, tokenizer, {})


def test_parquet_rows_equal_jsonl_rows(tokenizer, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    rows = arith_rows(3) + [{"messages": [{"role": "user", "content": "Compute 2+2."},
                                          {"role": "assistant", "content": "4"}]}]
    table = pa.Table.from_pylist([{"prompt": r.get("prompt"), "response": r.get("response"),
                                   "messages": r.get("messages")} for r in rows])
    pq.write_table(table, str(tmp_path / "sft.parquet"))
    from_parquet = SFTDataset(str(tmp_path / "sft.parquet"), tokenizer, {})
    from_jsonl = SFTDataset(write_jsonl(tmp_path / "sft.jsonl", rows), tokenizer, {})
    assert len(from_parquet) == 4
    for i in range(4):
        assert torch.equal(from_parquet[i]["input_ids"], from_jsonl[i]["input_ids"])
        assert torch.equal(from_parquet[i]["loss_mask"], from_jsonl[i]["loss_mask"])


def test_collate_right_pads(tokenizer, tmp_path):
    ds = SFTDataset(write_jsonl(tmp_path / "sft.jsonl", arith_rows(3) + [{"prompt": "Compute 1+1 now, please.",
                                                                           "response": "2"}]), tokenizer, {})
    batch = ds.collate_fn([ds[0], ds[3]])
    n0, n3 = len(ds[0]["input_ids"]), len(ds[3]["input_ids"])
    assert batch["input_ids"].shape == (2, max(n0, n3)) and batch["input_ids"].dtype == torch.long
    assert batch["attention_mask"][0].tolist() == [1] * n0 + [0] * (max(n0, n3) - n0)
    assert batch["input_ids"][0, n0:].eq(tokenizer.pad_token_id).all()
    assert batch["loss_mask"][0, :n0].tolist() == ds[0]["loss_mask"].tolist()
    assert batch["loss_mask"][0, n0:].eq(0).all()
    with pytest.raises(verl.DataError, match="loss_mask"):
        collate_sft([{"input_ids": torch.tensor([1, 2])}])


# -- the trainer ------------------------------------------------------------------------------------------------
def test_validate_equals_an_independent_token_mean(tiny_model_dir, tokenizer, tmp_path):
    path = write_jsonl(tmp_path / "sft.jsonl", arith_rows(6))
    trainer = SFTTrainer(sft_config(tiny_model_dir, tmp_path, path), val_dataset=path)
    got = trainer.validate()["val/loss"]
    batch = collate_sft([trainer.val_dataset[i] for i in range(6)], tokenizer.pad_token_id)
    with torch.no_grad():
        logits = trainer.model(batch["input_ids"], batch["attention_mask"]).double()
    logp = torch.log_softmax(logits[:, :-1], -1).gather(-1, batch["input_ids"][:, 1:, None]).squeeze(-1)
    mask = (batch["loss_mask"] * batch["attention_mask"])[:, 1:].double()
    assert got == pytest.approx(float(-(logp * mask).sum() / mask.sum()), rel=1e-5)
    assert got == pytest.approx(float(torch.log(torch.tensor(304.0))), rel=0.05)  # a random model: near uniform


def test_loss_falls_on_a_memorisable_set(tiny_model_dir, tmp_path, monkeypatch):
    """8 rows, 30 steps over the whole set (constant lr 3e-2): measured train/loss 5.69 -> 0.56 (0.098 x the
    start; lr 1e-2: 0.18 x, 5e-2: 0.080 x). The bound, 0.2 x the start, leaves a 2x margin to the measurement."""
    monkeypatch.chdir(tmp_path)
    path = write_jsonl(tmp_path / "sft.jsonl", arith_rows(8))
    config = sft_config(tiny_model_dir, tmp_path, path, extra={
        "data.train_batch_size": 8, "trainer.total_epochs": 30, "optim.lr": 3e-2,
        "optim.lr_scheduler_type": "constant", "optim.lr_warmup_steps_ratio": 0.0})
    trainer = SFTTrainer(config, val_dataset=path)
    trainer.fit()
    records = [data for _, data in read_metrics(tmp_path / "proj" / "sft.jsonl")]
    losses = [r["train/loss"] for r in records]
    assert len(losses) == 30
    assert losses[0] == pytest.approx(float(torch.log(torch.tensor(304.0))), rel=0.05)  # starts near uniform
    assert losses[-1] < 0.2 * losses[0]
    assert records[-1]["val/loss"] < 0.2 * losses[0]  # the same rows, after the last update
    for key in ("train/loss", "train/lr", "train/grad_norm", "train/mfu", "train/global_tokens", "train/total_tokens(B)"):
        assert all(key in r for r in records), key
    assert all(r["train/lr"] == 3e-2 for r in records)


def test_cli_end_to_end_into_a_ppo_ready_checkpoint(tiny_model_dir, toy_data, tmp_path):
    path = write_jsonl(tmp_path / "sft.jsonl", arith_rows(8))
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.abspath(verl.__file__)))}
    args = [f"model.path={tiny_model_dir}", f"data.train_files={path}", f"data.val_files={path}",
            "data.train_batch_size=4", "data.max_length=64", "trainer.total_training_steps=2", "trainer.test_freq=1",
            f"trainer.default_local_dir={tmp_path}/ckpt", "trainer.logger=[console]", "trainer.device=cpu",
            "trainer.project_name=proj", "trainer.experiment_name=cli", "model.enable_gradient_checkpointing=false"]
    result = subprocess.run([sys.executable, "-m", "verl.trainer.sft_trainer", *args], capture_output=True, text=True,
                            cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    assert "loss" in result.stdout
    records = read_metrics(tmp_path / "proj" / "cli.jsonl")
    assert [step for step, _ in records] == [1, 2] and all("val/loss" in data for _, data in records)
    actor = tmp_path / "ckpt" / "global_step_2" / "actor"
    assert (tmp_path / "ckpt" / "latest_checkpointed_iteration.txt").read_text() == "2"
    for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "optim.pt"):
        assert (actor / name).exists(), name
    model = verl.models.load_model(str(actor))
    base = verl.models.load_model(tiny_model_dir)
    assert any(not torch.equal(t, base.state_dict()[k]) for k, t in model.state_dict().items())  # trained

    # the checkpoint is a model path for GRPO as it is
    check_ppo_takes_checkpoint(str(actor), str(tmp_path / "ppo"), toy_data["train"])

    bad = subprocess.run([sys.executable, "-m", "verl.trainer.sft_trainer", *args, "data.max_lenght=32"],
                         capture_output=True, text=True, cwd=tmp_path, env=env)
    assert bad.returncode == 2 and "did you mean 'data.max_length'" in bad.stderr
    bad_rows = write_jsonl(tmp_path / "bad.jsonl", [*arith_rows(2), '{"prompt": "x"}'])
    bad = subprocess.run([sys.executable, "-m", "verl.trainer.sft_trainer", *args, f"data.train_files={bad_rows}"],
                         capture_output=True, text=True, cwd=tmp_path, env=env)
    assert bad.returncode == 2 and f"{bad_rows}:3:" in bad.stderr


def test_resume_continues_exactly(tiny_model_dir, tmp_path, monkeypatch):
    """4 steps straight == 2 steps with a checkpoint, then a new trainer resuming for 2 more (weights, AdamW
    state, cosine schedule with warmup, the shuffled dataloader across an epoch boundary)."""
    monkeypatch.chdir(tmp_path)
    path = write_jsonl(tmp_path / "sft.jsonl", arith_rows(12))

    def fit(out, steps, name):
        trainer = SFTTrainer(sft_config(tiny_model_dir, out, path, extra={
            "trainer.total_training_steps": 4, "trainer.experiment_name": name, "trainer.save_freq": 2,
            "data.val_files": path, "trainer.test_freq": 1}))
        if steps < 4:  # stop early as a killed run would, after the step-2 checkpoint
            trainer.total_training_steps = steps
        trainer.fit()
        return trainer

    straight = fit(tmp_path / "a", 4, "a")
    first = fit(tmp_path / "b", 2, "b")
    assert first.global_steps == 2 and (tmp_path / "b" / "ckpt" / "global_step_2" / "actor" / "optim.pt").exists()
    resumed = fit(tmp_path / "b", 4, "b")
    assert resumed.global_steps == 4
    assert resumed.hf_model_path == str(tmp_path / "b" / "ckpt" / "global_step_4" / "actor")

    def records(name):
        return dict(read_metrics(tmp_path / "proj" / f"{name}.jsonl"))

    a, b = records("a"), records("b")
    assert sorted(a) == sorted(b) == [1, 2, 3, 4]
    for step in (1, 2, 3, 4):
        keys = [k for k in a[step] if not k.startswith("timing_s/") and k != "train/mfu"]  # measured times
        assert keys and {k: b[step][k] for k in keys} == {k: a[step][k] for k in keys}, step
    want = straight.model.state_dict()
    for name, tensor in resumed.model.state_dict().items():
        assert torch.equal(tensor, want[name]), name


def test_crash_during_checkpoint_keeps_the_previous_one(tiny_model_dir, tmp_path, monkeypatch):
    path = write_jsonl(tmp_path / "sft.jsonl", arith_rows(8))
    trainer = SFTTrainer(sft_config(tiny_model_dir, tmp_path, path, extra={"trainer.max_ckpt_to_keep": 2}))
    batches = iter(trainer.train_dataloader)
    trainer.train_step(next(batches))
    first = trainer.save_checkpoint()
    saved = {k: v.clone() for k, v in trainer.model.state_dict().items()}
    trainer.train_step(next(batches))

    import verl.models

    real_save = verl.models.save_pretrained

    def crash(model, directory, **kwargs):
        real_save(model, directory, **kwargs)         # a partial checkpoint is on disk ...
        raise KeyboardInterrupt("killed mid-save")  # ... when the process dies

    monkeypatch.setattr(verl.models, "save_pretrained", crash)
    with pytest.raises(KeyboardInterrupt):
        trainer.save_checkpoint()
    monkeypatch.undo()
    root = os.path.dirname(first)
    assert sorted(os.listdir(root)) == ["global_step_1", "latest_checkpointed_iteration.txt"]
    fresh = SFTTrainer(sft_config(tiny_model_dir, tmp_path, path))
    fresh.load_checkpoint(first)
    assert fresh.global_steps == 1 and fresh.hf_model_path == os.path.join(first, "actor")
    for name, tensor in fresh.model.state_dict().items():
        assert torch.equal(tensor, saved[name]), name
    # max_ckpt_to_keep: three more saves keep the newest two
    for _ in range(3):
        trainer.train_step([trainer.train_dataset[i] for i in range(4)])
        trainer.save_checkpoint()
    assert sorted(os.listdir(root)) == ["global_step_4", "global_step_5", "latest_checkpointed_iteration.txt"]


def test_in_process_api_with_objects(tiny_model_dir, tokenizer, tmp_path, monkeypatch):
    """The demo's use: a model object and datasets passed directly, trained in place; the checkpoint copies the
    tokenizer from the directory it was loaded from."""
    monkeypatch.chdir(tmp_path)
    model = verl.models.load_model(tiny_model_dir)
    data = {"max_length": 64}
    train = SFTDataset(write_jsonl(tmp_path / "train.jsonl", arith_rows(8)), tokenizer, data)
    val = SFTDataset(write_jsonl(tmp_path / "val.jsonl", arith_rows(4, offset=9)), tokenizer, data)
    config = verl.load_sft_config(overrides=["data.train_batch_size=4", "trainer.total_epochs=1",
                                             f"trainer.default_local_dir={tmp_path}/ckpt", "trainer.logger=[console]",
                                             "model.path=null", "trainer.device=cpu", "optim.lr=1e-2"])
    before = {k: v.clone() for k, v in model.state_dict().items()}
    trainer = SFTTrainer(config, model=model, tokenizer=tokenizer, train_dataset=train, val_dataset=val)
    assert trainer.model is model and trainer.total_training_steps == 2
    result = trainer.fit()
    assert set(result) == {"val/loss"}
    assert any(not torch.equal(v, before[k]) for k, v in model.state_dict().items())  # trained in place
    actor = trainer.hf_model_path
    assert actor == os.path.join(str(tmp_path), "ckpt", "global_step_2", "actor")
    assert os.path.exists(os.path.join(actor, "tokenizer.json"))
    reloaded = verl.models.load_model(actor)
    for name, tensor in reloaded.state_dict().items():
        assert torch.equal(tensor, model.state_dict()[name]), name


def test_config_forms_and_errors(tiny_model_dir, tmp_path):
    path = write_jsonl(tmp_path / "sft.jsonl", arith_rows(4))
    cfg = sft_config(tiny_model_dir, tmp_path, path, extra={"optim.weight_decay": 0.0})
    trainer = SFTTrainer(cfg)
    assert trainer.config.optim.weight_decay == 0.0 and trainer.config.data.train_batch_size == 4
    assert trainer.config.optim.betas == [0.9, 0.999]  # defaults kept beside the sections given
    with pytest.raises(verl.ConfigError, match="did you mean 'optim.lr'"):
        SFTTrainer({"optim": {"lrr": 1.0}})
    with pytest.raises(verl.ConfigError, match="PPO tree"):
        SFTTrainer(verl.load_config())
    with pytest.raises(verl.ConfigError, match="model.path: model directory not found"):
        SFTTrainer({"model.path": str(tmp_path / "nope")})
    yaml_path = tmp_path / "run.yaml"
    yaml_path.write_text(f"model:\n  path: {tiny_model_dir}\ndata:\n  train_files: {path}\n  train_batch_size: 2\n")
    assert SFTTrainer(str(yaml_path)).train_dataloader.batch_size == 2
    with pytest.raises(verl.ConfigError, match="data.truncation"):
        verl.load_sft_config(overrides=["data.truncation=middle"])
    with pytest.raises(verl.ConfigError, match="no training data"):
        SFTTrainer({"model.path": tiny_model_dir, "data.train_files": str(tmp_path / "missing.jsonl")}).fit()


def test_cli_print_config_and_errors(capsys):
    from verl.trainer.sft_trainer import main

    assert main(["--print-config", "data.max_length=32", "trainer.experiment_name=run1"]) == 0
    out = capsys.readouterr().out
    assert "max_length: 32" in out and "default_local_dir: checkpoints/gsm8k-sft/run1" in out  # resolved
    assert main(["optim.lr=fast"]) == 2
    assert "optim.lr" in capsys.readouterr().err
    assert main(["--print-config", "data.truncation=middle"]) == 2
    assert "data.truncation" in capsys.readouterr().err
