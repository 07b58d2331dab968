"""verl.DPOTrainer and verl.utils.dataset.PreferenceDataset on a tiny random Qwen2 with the arith demo's real BPE
tokenizer: pair tokenization (text and chat completions, the prompt rendered as the RL dataset renders it), bad rows
naming file:line, the loss binding against TRL's formulas, config keys and their errors, and the command line end
to end into a checkpoint that PPOTrainer takes as its actor."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import pytest
import torch

import verl
from verl import DPOTrainer
from verl.trainer.dpo_trainer import as_dpo_config
from verl.trainer.dpo_trainer import main as dpo_main
from verl.utils.dataset import PreferenceDataset, collate_preference
from verl.utils.tracking import read_metrics

from trainer_helpers import check_ppo_takes_checkpoint, pair_rows, write_jsonl, write_tiny_model

EOS = "<|im_end|>"


# -- the dataset ------------------------------------------------------------------------------------------------
def test_text_and_chat_completions_follow_the_rendered_prompt(tokenizer, tmp_path):
    rows = [{"prompt": "Compute 3+4.", "chosen": "7", "rejected": "8"},
            {"prompt": [{"role": "user", "content": "Compute 3+4."}],
             "chosen": [{"role": "assistant", "content": "7"}], "rejected": [{"role": "assistant", "content": "8"}]}]
    ds = PreferenceDataset(write_jsonl(tmp_path / "p.jsonl", rows), tokenizer, {"max_length": 64})
    messages = [{"role": "user", "content": "Compute 3+4."}]
    prompt_text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    prompt_ids = tokenizer.encode(prompt_text, add_special_tokens=False)
    for i in range(2):
        for side, answer in (("chosen", "7"), ("rejected", "8")):
            ids, mask = ds[i][f"{side}_input_ids"], ds[i][f"{side}_loss_mask"]
            assert ids[:len(prompt_ids)].tolist() == prompt_ids  # the RL / SFT prompt rendering
            assert mask.tolist() == [0] * len(prompt_ids) + [1] * (len(ids) - len(prompt_ids))
            completion = tokenizer.decode(ids[mask.bool()].tolist())
            if i == 0:  # text: the completion and EOS, as an SFT response
                assert completion == answer + EOS
            else:  # messages: the chat template's rendering of the assistant turn after the prompt
                full = tokenizer.apply_chat_template(messages + [{"role": "assistant", "content": answer}],
                                                     tokenize=False)
                assert completion == full[len(prompt_text):] and completion.startswith(answer + EOS)
    batch = collate_preference([ds[0], ds[1]], ds.pad_token_id)
    assert batch["input_ids"].shape[0] == 4  # rows 2i chosen, 2i + 1 rejected
    assert torch.equal(batch["input_ids"][2, :len(ds[1]["chosen_input_ids"])], ds[1]["chosen_input_ids"])
    assert torch.equal(batch["loss_mask"][1, :len(ds[0]["rejected_loss_mask"])], ds[0]["rejected_loss_mask"])
    assert batch["attention_mask"].sum() == sum(len(ds[i][f"{s}_input_ids"]) for i in (0, 1)
                                                for s in ("chosen", "rejected"))


@pytest.mark.parametrize("bad, message", [
    ('["not", "an", "object"]', "a row must be an object"),
    ('{"prompt": "Compute 1+1.", "rejected": "3"}', "no 'chosen' completion"),
    ('{"prompt": "Compute 1+1.", "chosen": "2"}', "no 'rejected' completion"),
    ('{"prompt": "Compute 1+1.", "chosen": "2", "rejected": ""}', "'rejected' is an empty string"),
    ('{"prompt": "Compute 1+1.", "chosen": "2", "rejected": []}', "'rejected' must be a non-empty list"),
    ('{"prompt": "Compute 1+1.", "chosen": 2, "rejected": "3"}', "'chosen' must be a string or a list"),
    ('{"prompt": "Compute 1+1.", "chosen": "2", "rejected": [{"role": "user", "content": "3"}]}',
     "'rejected' must start with an assistant message"),
    ('{"prompt": 5, "chosen": "2", "rejected": "3"}', "'prompt' must be a non-empty list"),
    ('{"chosen": "2", "rejected": "3"}', "no 'prompt'"),
    ('{"prompt": "Compute 1+1.", "chosen": "2", "rejected": "3"', "invalid JSON"),
])
def test_bad_rows_name_file_and_line(tokenizer, tmp_path, bad, message):
    path = write_jsonl(tmp_path / "bad.jsonl", [pair_rows(1)[0], bad])
    with pytest.raises(verl.DataError, match=f"{path}:2: .*{message}"):
        PreferenceDataset(path, tokenizer, {})


def test_truncation_applies_to_each_sequence(tokenizer, tmp_path):
    row = {"prompt": "Compute 3+4.", "chosen": "7 " * 40, "rejected": "8"}
    path = write_jsonl(tmp_path / "long.jsonl", [row])
    with pytest.raises(verl.DataError, match=rf"{path}:1 \(chosen\): row has \d+ tokens, more than data.max_length=24"):
        PreferenceDataset(path, tokenizer, {"max_length": 24})
    ds = PreferenceDataset(path, tokenizer, {"max_length": 24, "truncation": "right"})
    assert len(ds[0]["chosen_input_ids"]) == 24 and len(ds[0]["rejected_input_ids"]) < 24


def test_parquet_pairs_equal_jsonl_pairs(tokenizer, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    pa = pytest.importorskip("pyarrow")
    rows = pair_rows(3)
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "p.parquet")
    a = PreferenceDataset(str(tmp_path / "p.parquet"), tokenizer, {})
    b = PreferenceDataset(write_jsonl(tmp_path / "p.jsonl", rows), tokenizer, {})
    for i in range(3):
        for key in a[i]:
            assert torch.equal(a[i][key], b[i][key])


# -- the loss ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("loss_type, beta, ls", [("sigmoid", 0.1, 0.0), ("sigmoid", 0.3, 0.25), ("ipo", 0.2, 0.0),
                                                 ("hinge", 0.5, 0.0)])
def test_loss_binding_equals_trls_formulas(loss_type, beta, ls):
    g = torch.Generator().manual_seed(0)
    pc, pr, rc, rr = (-20 * torch.rand(6, generator=g, dtype=torch.float64) for _ in range(4))
    lc = torch.tensor([3., 5, 1, 8, 2, 4], dtype=torch.float64)
    lr = torch.tensor([2., 6, 1, 3, 9, 4], dtype=torch.float64)
    pc.requires_grad_(True)
    losses, chosen_rewards, rejected_rewards = verl._C.algo.dpo_loss(pc, pr, rc, rr, lc, lr, beta, ls, loss_type)
    delta = (pc - rc) - (pr - rr)
    if loss_type == "sigmoid":
        expected = (-torch.nn.functional.logsigmoid(beta * delta) * (1 - ls)
                    - torch.nn.functional.logsigmoid(-beta * delta) * ls)
    elif loss_type == "hinge":
        expected = torch.relu(1 - beta * delta)
    else:
        expected = ((pc - rc) / lc - (pr - rr) / lr - 1 / (2 * beta)) ** 2
    assert torch.allclose(losses, expected, rtol=1e-13, atol=1e-15)
    grad, = torch.autograd.grad(losses.mean(), pc)
    expected_grad, = torch.autograd.grad(expected.mean(), pc)
    assert torch.allclose(grad, expected_grad, rtol=1e-12, atol=1e-15)
    assert torch.allclose(chosen_rewards, beta * (pc - rc).detach())
    assert torch.allclose(rejected_rewards, beta * (pr - rr))


# -- config -----------------------------------------------------------------------------------------------------
def test_config_keys_and_errors(tmp_path):
    cfg, dpo = as_dpo_config({"dpo": {"beta": 0.5}, "dpo.loss_type": "ipo", "optim.lr": 1e-5})
    assert dpo == {"beta": 0.5, "label_smoothing": 0.0, "loss_type": "ipo"} and cfg.get("optim.lr") == 1e-5
    _, dpo = as_dpo_config(None, ["dpo.label_smoothing=0.1", "data.max_length=32"])
    assert dpo["label_smoothing"] == 0.1
    yaml_path = tmp_path / "dpo.yaml"
    yaml_path.write_text("dpo:\n  beta: 0.25\n  loss_type: hinge\ndata:\n  max_length: 48\n")
    cfg, dpo = as_dpo_config(str(yaml_path), ["dpo.beta=0.3"])
    assert dpo == {"beta": 0.3, "label_smoothing": 0.0, "loss_type": "hinge"} and cfg.get("data.max_length") == 48
    with pytest.raises(verl.ConfigError, match="did you mean 'dpo.beta'"):
        as_dpo_config({"dpo.betta": 0.1})
    with pytest.raises(verl.ConfigError, match="dpo.label_smoothing' applies to dpo.loss_type=sigmoid only"):
        as_dpo_config({"dpo": {"loss_type": "ipo", "label_smoothing": 0.1}})
    with pytest.raises(verl.ConfigError, match="dpo.loss_type' must be one of sigmoid, ipo, hinge"):
        as_dpo_config(None, ["dpo.loss_type=kto"])
    with pytest.raises(verl.ConfigError, match="dpo.beta' must be > 0"):
        as_dpo_config({"dpo.beta": 0})
    with pytest.raises(verl.ConfigError, match="'data.response_key' is not used by DPO"):
        as_dpo_config({"data.response_key": "answer"})
    with pytest.raises(verl.ConfigError, match="data.max_lenght"):
        as_dpo_config({"data.max_lenght": 3})


# -- end to end -------------------------------------------------------------------------------------------------
def test_cli_end_to_end_into_a_ppo_actor(tiny_model_dir, toy_data, tmp_path, capsys):
    path = write_jsonl(tmp_path / "pairs.jsonl", pair_rows(8))
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.abspath(verl.__file__)))}
    args = [f"model.path={tiny_model_dir}", f"data.train_files={path}", f"data.val_files={path}",
            "data.train_batch_size=4", "data.micro_batch_size_per_gpu=2", "data.use_dynamic_bsz=false",
            "data.max_length=64", "trainer.total_training_steps=2", "trainer.test_freq=2", "optim.lr=1e-2",
            f"trainer.default_local_dir={tmp_path}/ckpt", "trainer.logger=[console]", "trainer.device=cpu",
            "trainer.project_name=proj", "trainer.experiment_name=dpo", "model.enable_gradient_checkpointing=false",
            "dpo.beta=0.5"]
    result = subprocess.run([sys.executable, "-m", "verl.trainer.dpo_trainer", *args], capture_output=True, text=True,
                            cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    records = read_metrics(tmp_path / "proj" / "dpo.jsonl")
    assert [step for step, _ in records] == [1, 2]
    first, last = records[0][1], records[1][1]
    for key in ("loss", "rewards/chosen", "rewards/rejected", "rewards/accuracies", "rewards/margins", "logps/chosen",
                "logps/rejected", "grad_norm", "learning_rate", "num_tokens"):
        assert key in first and math.isfinite(first[key]), key
    assert first["loss"] == pytest.approx(math.log(2), abs=1e-6)  # step 1: the policy is the reference
    assert first["rewards/margins"] == 0 and first["rewards/accuracies"] == 0
    assert "eval_loss" in last and "eval_rewards/accuracies" in last
    actor = tmp_path / "ckpt" / "global_step_2" / "actor"
    for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "optim.pt"):
        assert (actor / name).exists(), name
    model = verl.models.load_model(str(actor))
    base = verl.models.load_model(tiny_model_dir)
    assert any(not torch.equal(t, base.state_dict()[k]) for k, t in model.state_dict().items())  # trained

    check_ppo_takes_checkpoint(str(actor), str(tmp_path / "ppo"), toy_data["train"])  # the checkpoint is a PPO actor

    # the other command-line paths in process (no second interpreter start)
    assert dpo_main([*args, "--print-config"]) == 0
    assert "dpo:\n  beta: 0.5\n" in capsys.readouterr().out
    assert dpo_main([*args, "--explain", "dpo.loss_type", "--explain", "data.response_key"]) == 0
    out = capsys.readouterr().out
    assert "dpo.loss_type = 'sigmoid': honoured" in out and "data.response_key = 'response': refused by DPO" in out
    bad_rows = write_jsonl(tmp_path / "bad.jsonl", [*pair_rows(2), '{"prompt": "x", "chosen": "y"}'])
    assert dpo_main([*args, f"data.train_files={bad_rows}"]) == 2
    assert f"{bad_rows}:3: row has no 'rejected'" in capsys.readouterr().err
    assert dpo_main([*args, "dpo.los_type=ipo"]) == 2
    assert "did you mean 'dpo.loss_type'" in capsys.readouterr().err


def test_in_process_api_learns_the_pairs_and_resumes(tiny_model_dir, tokenizer, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the metrics file goes to <cwd>/<project>/<experiment>.jsonl, not into the repo
    path = write_jsonl(tmp_path / "pairs.jsonl", pair_rows(8))

    def config(out: str, steps: int) -> dict:
        return {"model": {"path": tiny_model_dir, "enable_gradient_checkpointing": False},
                "data": {"train_files": path, "train_batch_size": 8, "micro_batch_size_per_gpu": 4, "max_length": 64},
                "optim": {"lr": 1e-2},
                "trainer": {"default_local_dir": f"{tmp_path}/{out}", "logger": ["console"], "total_epochs": 10,
                            "total_training_steps": steps, "save_freq": 3, "project_name": "p",
                            "experiment_name": out, "device": "cpu"},
                "dpo": {"beta": 0.5}}

    trainer = DPOTrainer(config=config("straight", 6), tokenizer=tokenizer)
    batch = trainer.train_dataset.collate_fn([trainer.train_dataset[i] for i in range(8)])
    before = trainer.sequence_log_probs(batch)
    trainer.fit()
    after = trainer.sequence_log_probs(batch)
    # the trained pairs' chosen sequences gained on their rejected ones; the reference stayed where the policy began
    assert ((after[0::2] - after[1::2]) > (before[0::2] - before[1::2])).all()
    assert torch.equal(trainer.sequence_log_probs(batch, reference=True), before)
    assert trainer.hf_model_path == os.path.join(str(tmp_path), "straight", "global_step_6", "actor")
    # 3 steps, then a new trainer resumes from the checkpoint: the reference is still model.path's weights and the
    # run ends on the straight run's weights
    DPOTrainer(config=config("resumed", 3), tokenizer=tokenizer).fit()
    resumed = DPOTrainer(config=config("resumed", 6), tokenizer=tokenizer)
    resumed.fit()
    assert resumed.global_steps == 6
    assert torch.equal(resumed.sequence_log_probs(batch, reference=True), before)
    for name, tensor in resumed.model.state_dict().items():
        assert torch.allclose(tensor, trainer.model.state_dict()[name], rtol=0, atol=1e-6), name


def test_reference_model_argument(tiny_model_dir, tokenizer, tmp_path):
    path = write_jsonl(tmp_path / "pairs.jsonl", pair_rows(4))
    other_dir = write_tiny_model(str(tmp_path / "other"), seed=3)
    config = {"model.path": tiny_model_dir, "data.train_files": path, "data.train_batch_size": 4,
              "trainer.device": "cpu", "trainer.logger": ["console"]}
    default = DPOTrainer(config=config, tokenizer=tokenizer)
    batch = default.train_dataset.collate_fn([default.train_dataset[i] for i in range(4)])
    policy = default.sequence_log_probs(batch)
    assert torch.equal(default.sequence_log_probs(batch, reference=True), policy)  # a copy of the policy
    by_path = DPOTrainer(config=config, ref_model=other_dir, tokenizer=tokenizer)
    other = by_path.sequence_log_probs(batch, reference=True)
    assert not torch.allclose(other, policy)
    assert torch.equal(by_path.sequence_log_probs(batch), policy)
    by_object = DPOTrainer(config=config, ref_model=verl.models.load_model(other_dir), tokenizer=tokenizer)
    assert torch.equal(by_object.sequence_log_probs(batch, reference=True), other)
    # the first step's rewards are measured against that reference: beta * (policy - reference)
    metrics = by_object.train_step(batch)
    assert metrics["rewards/chosen"] == pytest.approx(0.1 * (policy[0::2] - other[0::2]).mean().item(), rel=1e-5)
    with pytest.raises(TypeError, match="ref_model must be"):
        DPOTrainer(config=config, ref_model=42, tokenizer=tokenizer)
