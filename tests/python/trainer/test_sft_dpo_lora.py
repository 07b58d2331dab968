"""LoRA in the SFT and DPO trainers through verl's SFT keys (model.lora_rank / lora_alpha / target_modules /
exclude_modules / lora_adapter_path, issue 42 item 2): the adapters learn while the base stays bit for bit, the optimizer
holds their state alone, checkpoints hold the merged model and PEFT's adapter files, a resume continues exactly, and
DPO's reference is the base model with the adapters disabled (no second copy of the weights)."""

from __future__ import annotations

import json

import pytest
import torch

import verl
from verl import DPOTrainer
from verl.trainer.sft_trainer import SFTTrainer

from test_sft_trainer import arith_rows
from trainer_helpers import pair_rows, write_jsonl

LORA = {"lora_rank": 8, "lora_alpha": 16}


def sft_config(model_dir, tmp_path, train_file, out="run", steps=4, **model):
    return {"model": {"path": model_dir, "enable_gradient_checkpointing": False, **LORA, **model},
            "data": {"train_files": train_file, "train_batch_size": 4, "micro_batch_size_per_gpu": 2,
                     "max_length": 64},
            "optim": {"lr": 5e-2},
            "trainer": {"default_local_dir": f"{tmp_path}/{out}", "logger": ["console"], "total_epochs": 10,
                        "total_training_steps": steps, "save_freq": 2, "project_name": "p", "experiment_name": out,
                        "device": "cpu"}}


def base_names(model) -> list[str]:
    return [n for n in model.state_dict() if ".lora_" not in n]


def test_sft_with_lora_trains_the_adapters_only(untied_model_dir, tmp_path, monkeypatch):
    """The untied-head tiny model (trainer_helpers.write_untied_model: decoder adapters can steer its logits)."""
    tiny_model_dir = untied_model_dir
    monkeypatch.chdir(tmp_path)
    path = write_jsonl(tmp_path / "sft.jsonl", arith_rows(16))
    trainer = SFTTrainer(sft_config(tiny_model_dir, tmp_path, path, steps=6))
    module = trainer.model
    assert module.lora["lora_rank"] == 8 and module.lora["target_modules"] == "all-linear"
    adapters = module.adapter_state_dict()
    assert len(adapters) == 2 * 7 * 2  # A and B on 7 linears in each of 2 layers
    before = trainer.validate(path)["val/loss"]
    trainer.fit()
    # the engine's AdamW state: two fp32 moments per adapter parameter, nothing for the base
    assert trainer._trainer.engine.optimizer_state_bytes() == sum(t.numel() for t in adapters.values()) * 2 * 4
    assert trainer.validate(path)["val/loss"] < before - 0.5
    base = verl.models.load_model(tiny_model_dir).state_dict()
    state = module.state_dict()
    for name in base_names(module):
        assert torch.equal(state[name], base[name]), name

    # the checkpoint: the merged model (what transformers and PPO load) beside PEFT's adapter files
    actor = tmp_path / "run" / "global_step_6" / "actor"
    config = json.loads((actor / "lora_adapter" / "adapter_config.json").read_text())
    assert config["r"] == 8 and config["lora_alpha"] == 16 and config["base_model_name_or_path"] == tiny_model_dir
    merged = verl.models.load_model(actor).state_dict()
    for name, tensor in module.merged_state_dict().items():
        assert torch.equal(merged[name], tensor), name
    ids = torch.randint(0, 304, (2, 10), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        unmerged = module(ids)  # W x + B (A x) s against (W + B A s) x: fp32 rounding, relative to the logits
        torch.testing.assert_close(verl.models.load_model(actor)(ids), unmerged, rtol=1e-5,
                                   atol=1e-5 * unmerged.abs().max().item())


def test_sft_lora_resumes_exactly(tiny_model_dir, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = write_jsonl(tmp_path / "sft.jsonl", arith_rows(16))
    straight = SFTTrainer(sft_config(tiny_model_dir, tmp_path, path, "straight", 4))
    straight.fit()
    SFTTrainer(sft_config(tiny_model_dir, tmp_path, path, "resumed", 2)).fit()
    resumed = SFTTrainer(sft_config(tiny_model_dir, tmp_path, path, "resumed", 4))
    resumed.fit()
    assert resumed.global_steps == 4
    want = straight.model.state_dict()
    for name, tensor in resumed.model.state_dict().items():
        assert torch.equal(tensor, want[name]), name
    # a LoRA checkpoint does not resume full fine-tuning, nor the reverse: the error names the keys
    full = sft_config(tiny_model_dir, tmp_path, path, "resumed", 6, lora_rank=0)
    with pytest.raises(verl.CheckpointError, match="model.lora_"):
        SFTTrainer(full).fit()


def test_sft_target_and_exclude_modules_and_a_peft_start(tiny_model_dir, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = write_jsonl(tmp_path / "sft.jsonl", arith_rows(8))
    trainer = SFTTrainer(sft_config(tiny_model_dir, tmp_path, path, steps=1, target_modules=["q_proj", "v_proj"],
                                    exclude_modules="model\\.layers\\.1\\..*"))
    assert sorted({n.rsplit(".lora_", 1)[0] for n in trainer.model.adapter_state_dict()}) == [
        "model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.v_proj"]
    trainer.fit()
    adapter = tmp_path / "run" / "global_step_1" / "actor" / "lora_adapter"
    start = SFTTrainer(sft_config(tiny_model_dir, tmp_path, path, "second", 1, lora_rank=0,
                                  lora_adapter_path=str(adapter)))
    for name, tensor in trainer.model.adapter_state_dict().items():
        assert torch.equal(start.model.adapter_state_dict()[name], tensor), name
    with pytest.raises(verl.ConfigError, match="model.target_modules"):
        SFTTrainer(sft_config(tiny_model_dir, tmp_path, path, target_modules=["lm_head"]))


def test_dpo_with_lora_uses_the_base_as_its_reference(tiny_model_dir, tokenizer, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = write_jsonl(tmp_path / "pairs.jsonl", pair_rows(8))
    config = {"model": {"path": tiny_model_dir, "enable_gradient_checkpointing": False, **LORA},
              "data": {"train_files": path, "train_batch_size": 8, "micro_batch_size_per_gpu": 4, "max_length": 64},
              "optim": {"lr": 5e-2},
              "trainer": {"default_local_dir": f"{tmp_path}/dpo", "logger": ["console"], "total_epochs": 10,
                          "total_training_steps": 6, "project_name": "p", "experiment_name": "dpo",
                          "device": "cpu"},
              "dpo": {"beta": 0.5}}
    trainer = DPOTrainer(config=config, tokenizer=tokenizer)
    assert trainer._trainer.reference is None  # no second copy of the weights
    plain = DPOTrainer(config={**config, "model": {**config["model"], "lora_rank": 0}}, tokenizer=tokenizer)
    batch = trainer.train_dataset.collate_fn([trainer.train_dataset[i] for i in range(8)])
    base = plain.sequence_log_probs(batch)  # a separately loaded base model
    assert torch.equal(trainer.sequence_log_probs(batch), base)  # B = 0: the adapters change nothing yet
    trainer.fit()
    after = trainer.sequence_log_probs(batch)
    # the chosen gained on the rejected: the mean margin by 0.39 nats in 6 steps (measured; the tiny model's tied
    # 0.02-std embedding limits what decoder adapters can move, see test_trainer_lora.py's untied model)
    gain = (after[0::2] - after[1::2]) - (base[0::2] - base[1::2])
    assert gain.mean() > 0.2 and (gain > 0).sum() >= 6, gain
    assert torch.equal(trainer.sequence_log_probs(batch, reference=True), base)  # the reference stayed the base
    for name in base_names(trainer.model):
        assert torch.equal(trainer.model.state_dict()[name], plain.model.state_dict()[name]), name
