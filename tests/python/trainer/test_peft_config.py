"""A PEFT LoraConfig as verl's LoRA keys (verl.trainer.peft_config): ``RLConfig(peft_config=...)``,
``PPOTrainer(..., peft_config=...)`` (TRL's form) and the tutorial YAML's ``model.lora_*`` / ``peft_config:`` land on
``actor_rollout_ref.model.lora_rank / lora_alpha / target_modules / exclude_modules``; a field verl's LoRA does not
implement is a ConfigError naming it; a trainer built from a LoraConfig steps exactly as one built from the keys."""

from __future__ import annotations

import textwrap

import pytest
import torch

from verl import PPOTrainer, RLConfig
from verl.errors import ConfigError
from verl.trainer.peft_config import peft_lora_settings

from test_ppo_trainer import digit_fraction
from trainer_helpers import toy_overrides

peft = pytest.importorskip("peft")
LoraConfig = peft.LoraConfig

KEYS = "actor_rollout_ref.model"


def lora_keys(cfg) -> dict:
    tree = cfg.to_config()
    return {name: tree[f"{KEYS}.{name}"] for name in ("lora_rank", "lora_alpha", "target_modules", "exclude_modules")}


def test_a_lora_config_sets_verls_keys():
    cfg = RLConfig(algorithm="grpo", peft_config=LoraConfig(r=16, lora_alpha=32, target_modules=["v_proj", "q_proj"],
                                                            exclude_modules=["model.layers.0.self_attn.q_proj"],
                                                            task_type="CAUSAL_LM"))
    assert lora_keys(cfg) == {"lora_rank": 16, "lora_alpha": 32, "target_modules": ["q_proj", "v_proj"],
                              "exclude_modules": ["model.layers.0.self_attn.q_proj"]}
    # all-linear and a regex stay strings, as verl's target_modules takes them
    assert lora_keys(RLConfig(peft_config=LoraConfig(r=8, target_modules="all-linear")))["target_modules"] == \
        "all-linear"
    assert lora_keys(RLConfig(peft_config=LoraConfig(r=8, target_modules=r".*\.(q|v)_proj")))["target_modules"] == \
        r".*\.(q|v)_proj"
    # PEFT's default targets for Llama / Qwen / Mistral (target_modules None) and its default alpha (8)
    assert lora_keys(RLConfig(peft_config=LoraConfig(r=4))) == {
        "lora_rank": 4, "lora_alpha": 8, "target_modules": ["q_proj", "v_proj"], "exclude_modules": None}


def test_adapter_config_mappings_and_the_dict_forms_take_it_too():
    fields = LoraConfig(r=16, lora_alpha=32, target_modules="all-linear").to_dict()
    as_json = {k: (v.value if hasattr(v, "value") else sorted(v) if isinstance(v, set) else v)
               for k, v in fields.items()}  # what adapter_config.json holds
    assert peft_lora_settings(as_json) == peft_lora_settings(LoraConfig(r=16, lora_alpha=32,
                                                                        target_modules="all-linear"))
    from_dict = RLConfig.from_dict({"algorithm": "grpo", "peft_config": {"r": 16, "lora_alpha": 32,
                                                                         "target_modules": "all-linear"}})
    assert lora_keys(from_dict)["lora_rank"] == 16 and lora_keys(from_dict)["target_modules"] == "all-linear"


def test_the_tutorial_shape_takes_lora_keys_and_a_peft_config_section(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text(textwrap.dedent("""
        model:
          name_or_path: /models/Qwen2.5-0.5B-Instruct
          lora_rank: 32
          lora_alpha: 64
          target_modules: all-linear
        algorithm:
          name: grpo
    """))
    assert lora_keys(RLConfig.from_yaml(path)) == {"lora_rank": 32, "lora_alpha": 64, "target_modules": "all-linear",
                                                   "exclude_modules": None}
    path.write_text(textwrap.dedent("""
        model:
          name_or_path: /models/Qwen2.5-0.5B-Instruct
        algorithm:
          name: grpo
        peft_config:
          r: 16
          lora_alpha: 32
          target_modules: [q_proj, k_proj, v_proj, o_proj]
    """))
    assert lora_keys(RLConfig.from_yaml(path))["target_modules"] == ["q_proj", "k_proj", "v_proj", "o_proj"]


@pytest.mark.parametrize("field, value", [
    ("lora_dropout", 0.05), ("use_dora", True), ("use_rslora", True), ("bias", "all"),
    ("init_lora_weights", "gaussian"), ("modules_to_save", ["lm_head"]), ("layers_to_transform", [0]),
    ("rank_pattern", {"q_proj": 4}), ("alpha_pattern", {"q_proj": 4}), ("fan_in_fan_out", True)])
def test_fields_verls_lora_does_not_implement_are_config_errors_naming_them(field, value):
    with pytest.raises(ConfigError, match=f"peft_config.{field}"):
        RLConfig(peft_config=LoraConfig(r=8, **{field: value}))
    with pytest.raises(ConfigError, match=f"peft_config.{field}"):
        peft_lora_settings({"r": 8, "lora_alpha": 16, field: value})


def test_bad_peft_configs_are_config_errors():
    with pytest.raises(ConfigError, match="peft_type"):
        peft_lora_settings(peft.IA3Config(target_modules=["k_proj"], feedforward_modules=[]))
    with pytest.raises(ConfigError, match="peft_config.not_a_field"):
        peft_lora_settings({"r": 8, "lora_alpha": 16, "not_a_field": 1})
    with pytest.raises(ConfigError, match="peft_config must be"):
        peft_lora_settings(8)
    with pytest.raises(ConfigError, match="target_modules"):
        peft_lora_settings({"r": 8, "lora_alpha": 16, "target_modules": 3})
    with pytest.raises(ConfigError, match="peft_config and lora_rank"):
        RLConfig(lora_rank=8, peft_config=LoraConfig(r=8))
    with pytest.raises(ConfigError, match="lora_rank"):  # the tree's own check of the value
        RLConfig(peft_config={"r": -1, "lora_alpha": 16})


def test_a_trainer_given_a_lora_config_steps_as_one_given_verls_keys(untied_model_dir, toy_data, tmp_path):
    """TRL's form, PPOTrainer(peft_config=LoraConfig(...)), over a config without LoRA keys: the same adapters, and
    the same step bit for bit as the trainer built from actor_rollout_ref.model.lora_* (fixed seed)."""
    base = toy_overrides(untied_model_dir, str(tmp_path / "a"), "grpo", 1)
    peft_trainer = PPOTrainer(config=RLConfig(overrides=base), reward_fn=digit_fraction,
                              train_dataset=toy_data["train"],
                              peft_config=LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"]))
    keyed = toy_overrides(untied_model_dir, str(tmp_path / "b"), "grpo", 1) + [
        f"{KEYS}.lora_rank=8", f"{KEYS}.lora_alpha=16", f"{KEYS}.target_modules=[q_proj,v_proj]"]
    key_trainer = PPOTrainer(config=RLConfig(overrides=keyed), reward_fn=digit_fraction,
                             train_dataset=toy_data["train"])
    module = peft_trainer._trainer.actor_model
    assert module.lora["lora_rank"] == 8 and module.lora["lora_alpha"] == 16
    assert sorted({name.split(".")[-3] for name in module.adapter_state()}) == ["q_proj", "v_proj"]

    from verl.utils.dataset import create_rl_dataloader

    batch = next(iter(create_rl_dataloader(peft_trainer.train_dataset, peft_trainer.config.data, train=True)))
    ours, theirs = peft_trainer.step(batch), key_trainer.step(batch)
    for key in ("critic/score/mean", "actor/pg_loss", "actor/grad_norm"):
        assert ours[key] == theirs[key], key
    for name, tensor in module.adapter_state().items():
        assert torch.equal(tensor, key_trainer._trainer.actor_model.adapter_state()[name]), name
