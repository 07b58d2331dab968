"""LoRA through verl's keys in the PPO trainer (actor_rollout_ref.model.lora_rank / lora_alpha / target_modules /
exclude_modules / lora_adapter_path): GRPO learns with adapters only, the base weights stay bit for bit, the optimizer
holds the adapters' AdamW state alone, the reference policy is the base model with adapters disabled, the rollout
generates with the adapters (its log-probs those of the trainer's recomputation), checkpoints hold PEFT's files that
PEFT loads, and a resume continues exactly."""

from __future__ import annotations

import json
import math
import os
import shutil

import pytest
import torch

import verl
from verl import PPOTrainer, RLConfig
from verl.utils.tracking import read_metrics

from test_ppo_trainer import digit_fraction, same, wall_clock_dependent
from trainer_helpers import toy_overrides

LORA = ["actor_rollout_ref.model.lora_rank=8", "actor_rollout_ref.model.lora_alpha=16"]
#: merged weights round differently from the unmerged expression the trainer computes; measured on this test's model
#: (4 steps, fp32, Xeon): max |p_rollout - p_trainer| 6.7e-7 merged, 5.5e-7 unmerged (batch shapes differ either way)
MERGE_TOLERANCE = 1e-6


def make_trainer(model_dir, toy_data, tmp_path, steps=2, extra=(), estimator="grpo"):
    cfg = RLConfig(overrides=[*toy_overrides(model_dir, str(tmp_path), estimator, steps), *LORA, *extra])
    return PPOTrainer(config=cfg, reward_fn=digit_fraction, train_dataset=toy_data["train"])


def batches(trainer):
    from verl.utils.dataset import create_rl_dataloader

    while True:
        yield from create_rl_dataloader(trainer.train_dataset, trainer.config.data, train=True)


def adapter_parameter_count(model) -> int:
    return sum(t.numel() for t in model.adapter_state().values())


def test_grpo_with_lora_learns_and_trains_the_adapters_only(untied_model_dir, toy_data, tmp_path):
    """Fixed seed: GRPO with rank-8 adapters on every decoder linear raises the mean digit fraction by at least 0.5
    within 8 steps (measured: 0.013 -> 0.99 at lr 0.1; LoRA's learning rates run ~10x full fine-tuning's)."""
    steps = 8
    trainer = make_trainer(untied_model_dir, toy_data, tmp_path, steps,
                           ["actor_rollout_ref.actor.optim.lr=0.1", "trainer.total_epochs=5"])
    module = trainer._trainer.actor_model
    base = verl.models.load_model(untied_model_dir).state_dict()
    assert module.lora["lora_rank"] == 8 and module.lora["target_modules"] == "all-linear"
    assert len(module.adapter_state()) == 2 * 7 * 2  # A and B on 7 linears in each of 2 layers

    rewards = []
    for batch in batches(trainer):
        metrics = trainer.step(batch)
        rewards.append(metrics["critic/score/mean"])
        # The engine generates with the adapters (unmerged, in the actor's own module): its log-probs are the
        # trainer's recomputation's.
        assert metrics["training/rollout_probs_diff_max"] <= 1e-6, metrics["training/rollout_probs_diff_max"]
        if len(rewards) == steps:
            break
    first, last = sum(rewards[:2]) / 2, sum(rewards[-2:]) / 2
    assert last - first >= 0.5, rewards

    state = module.state_dict()
    for name, tensor in base.items():
        assert torch.equal(state[name], tensor), f"{name}: a frozen base weight changed"
    moved = [name for name, t in module.adapter_state().items() if name.endswith("lora_B.weight") and t.abs().max() > 0]
    assert len(moved) == 14, moved
    # AdamW's two moments in float32 for the adapters' parameters, nothing for the base.
    assert trainer._trainer.optimizer_state_bytes("actor") == adapter_parameter_count(module) * 2 * 4


def test_target_and_exclude_modules_pick_the_adapted_linears(tiny_model_dir, toy_data, tmp_path):
    trainer = make_trainer(tiny_model_dir, toy_data, tmp_path, 1, [
        "actor_rollout_ref.model.target_modules=[q_proj,v_proj,down_proj]",
        "actor_rollout_ref.model.exclude_modules=model.layers.0.mlp.down_proj"])
    names = sorted({n.rsplit(".lora_", 1)[0] for n in trainer._trainer.actor_model.adapter_state()})
    assert names == ["model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.v_proj",
                     "model.layers.1.mlp.down_proj", "model.layers.1.self_attn.q_proj",
                     "model.layers.1.self_attn.v_proj"]


def test_the_reference_policy_is_the_base_model(tiny_model_dir, toy_data, tmp_path):
    trainer = make_trainer(tiny_model_dir, toy_data, tmp_path, 3, ["actor_rollout_ref.actor.use_kl_loss=true",
                                                                   "actor_rollout_ref.actor.optim.lr=0.05"])
    assert trainer._trainer.ref_model is None  # no second copy of the weights
    loader = batches(trainer)
    for _ in range(2):
        metrics = trainer.step(next(loader))
    assert metrics["actor/kl_loss"] > 0  # the adapters moved the policy away from the base
    rows = [trainer.train_dataset[i] for i in range(4)]
    rollouts = trainer.collect_rollouts(rows)
    trainer.compute_rewards(rollouts)
    trainer.optimize(rollouts)
    rollouts = trainer.last_batch
    ref = rollouts.batch["ref_log_prob"]
    # The same responses under a separately loaded base model.
    base = verl.models.load_model(tiny_model_dir)
    ids, mask = rollouts.batch["input_ids"], rollouts.batch["attention_mask"]
    response_length = rollouts.batch["responses"].shape[1]
    with torch.no_grad():
        logits = base(ids, mask, (mask.cumsum(-1) - 1).clamp(min=0))
    log_probs = torch.log_softmax(logits[:, -response_length - 1:-1].double(), -1)
    want = log_probs.gather(-1, rollouts.batch["responses"].unsqueeze(-1)).squeeze(-1)
    valid = rollouts.batch["response_mask"].bool()
    torch.testing.assert_close(ref[valid].double(), want[valid], rtol=0, atol=1e-5)


def test_gae_with_a_lora_critic_trains_its_adapters_and_its_value_head(tiny_model_dir, toy_data, tmp_path):
    trainer = make_trainer(tiny_model_dir, toy_data, tmp_path, 2, ["critic.model.lora_rank=4",
                                                                   "critic.model.lora_alpha=8"], estimator="gae")
    critic = trainer._trainer.critic_model
    assert critic.lora["lora_rank"] == 4
    base = verl.models.load_model(tiny_model_dir).state_dict()
    score_before = critic.state_dict()["score.weight"].clone()
    loader = batches(trainer)
    for _ in range(2):
        metrics = trainer.step(next(loader))
        assert math.isfinite(metrics["critic/vf_loss"]) and math.isfinite(metrics["critic/grad_norm"])
    state = critic.state_dict()
    for name, tensor in base.items():
        if name != "lm_head.weight":
            assert torch.equal(state[name], tensor), f"{name}: a frozen base weight of the critic changed"
    assert not torch.equal(state["score.weight"], score_before)  # the value head trains in full
    trained = adapter_parameter_count(critic) + sum(t.numel() for n, t in state.items() if n.startswith("score."))
    assert trainer._trainer.optimizer_state_bytes("critic") == trained * 2 * 4

    # The critic's checkpoint: PEFT's files hold the adapters and the head; a new trainer takes them back.
    path = trainer.save_checkpoint()
    files = json.loads((tmp_path / "ckpt" / "global_step_2" / "critic" / "lora_adapter" /
                        "adapter_config.json").read_text())
    assert files["task_type"] == "TOKEN_CLS" and "score" in files["modules_to_save"]
    other = make_trainer(tiny_model_dir, toy_data, tmp_path / "other", 2, ["critic.model.lora_rank=4",
                                                                          "critic.model.lora_alpha=8"],
                         estimator="gae")
    other.load_checkpoint(path)
    for name, tensor in other._trainer.critic_model.state_dict().items():
        assert torch.equal(tensor, state[name]), name

    # A reward model scores with the LoRA-trained value checkpoint (its merged weights): the trained critic's values.
    from verl.workers import RewardModelWorker

    scorer = RewardModelWorker({"reward_model.enable": True, "reward_model.model.path": os.path.join(path, "critic"),
                                "reward_model.micro_batch_size_per_gpu": 2})
    sequences = [torch.tensor([5, 17, 40, 20, 21]), torch.tensor([100, 7, 8, 30]), torch.tensor([3, 44, 45, 46])]
    with torch.no_grad():
        values = [critic.forward_packed(seq, torch.tensor([0, seq.numel()], dtype=torch.int32))[-1] for seq in sequences]
    torch.testing.assert_close(scorer.score_sequences(sequences), torch.stack(values).float().reshape(-1),
                               rtol=1e-5, atol=1e-5)


def test_a_bad_target_is_a_config_error(tiny_model_dir, toy_data, tmp_path):
    with pytest.raises(verl.ConfigError, match="actor_rollout_ref.model.target_modules .*selects no module"):
        make_trainer(tiny_model_dir, toy_data, tmp_path, 1, ["actor_rollout_ref.model.target_modules=[qproj]"])


def fit(model_dir, toy_data, out, steps, extra=()):
    cfg = RLConfig(overrides=[*toy_overrides(model_dir, str(out), "grpo", steps), *LORA,
                              "actor_rollout_ref.actor.optim.lr=0.03", *extra])
    trainer = PPOTrainer(config=cfg, reward_fn=digit_fraction, train_dataset=toy_data["train"])
    trainer.fit()
    return trainer


def test_checkpoints_hold_peft_files_and_resume_exactly(tiny_model_dir, toy_data, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    straight = fit(tiny_model_dir, toy_data, tmp_path / "a", 4, ["trainer.experiment_name=a"])
    fit(tiny_model_dir, toy_data, tmp_path / "b", 2, ["trainer.experiment_name=b", "trainer.save_freq=2"])
    actor = tmp_path / "b" / "ckpt" / "global_step_2" / "actor"
    adapter = actor / "lora_adapter"
    assert sorted(p.name for p in adapter.iterdir()) == ["adapter_config.json", "adapter_model.safetensors"]
    config = json.loads((adapter / "adapter_config.json").read_text())
    assert config["r"] == 8 and config["lora_alpha"] == 16 and config["base_model_name_or_path"] == tiny_model_dir

    # transformers loads actor/ (the merged model), PEFT loads the adapter onto the base: the same logits.
    transformers = pytest.importorskip("transformers")
    peft = pytest.importorskip("peft")
    merged = transformers.AutoModelForCausalLM.from_pretrained(actor).eval()
    base = transformers.AutoModelForCausalLM.from_pretrained(tiny_model_dir).eval()
    with_adapter = peft.PeftModel.from_pretrained(base, adapter).eval()
    ids = torch.randint(0, 304, (2, 12), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        torch.testing.assert_close(merged(input_ids=ids).logits, with_adapter(input_ids=ids).logits,
                                   rtol=1e-5, atol=1e-5)
    # verl's model merger: the merged weights as a Hugging Face directory, the adapter beside them as it was.
    from verl.model_merger.merger import main as model_merger

    assert model_merger(["merge", "--backend", "fsdp", "--local_dir", str(actor), "--target_dir",
                         str(tmp_path / "merged")]) == 0
    written = verl.models.load_model(tmp_path / "merged").state_dict()
    for name, tensor in verl.models.load_model(actor).state_dict().items():
        assert torch.equal(written[name], tensor), name
    for name in ("adapter_config.json", "adapter_model.safetensors"):
        assert (tmp_path / "merged" / "lora_adapter" / name).read_bytes() == (adapter / name).read_bytes()
    damaged = tmp_path / "damaged"
    shutil.copytree(actor, damaged)
    (damaged / "lora_adapter" / "adapter_model.safetensors").write_bytes(b"\0" * 16)
    assert model_merger(["merge", "--backend", "fsdp", "--local_dir", str(damaged), "--target_dir",
                         str(tmp_path / "merged2")]) == 2  # refused before anything is written
    assert not (tmp_path / "merged2").exists()

    resumed = fit(tiny_model_dir, toy_data, tmp_path / "b", 4, ["trainer.experiment_name=b"])
    assert resumed.global_steps == 4
    a = dict(read_metrics(tmp_path / "proj" / "a.jsonl"))
    b = dict(read_metrics(tmp_path / "proj" / "b.jsonl"))
    for step in (1, 2, 3, 4):
        for key, value in a[step].items():
            if not wall_clock_dependent(key):
                assert same(b[step][key], value), (step, key, b[step][key], value)
    want = straight._trainer.actor_model.state_dict()
    for name, tensor in resumed._trainer.actor_model.state_dict().items():
        assert torch.equal(tensor, want[name]), name


def test_training_starts_from_a_peft_adapter(tiny_model_dir, toy_data, tmp_path):
    """lora_adapter_path: the adapter's settings and values (written by PEFT) are where training starts."""
    transformers = pytest.importorskip("transformers")
    peft = pytest.importorskip("peft")
    base = transformers.AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    torch.manual_seed(1)  # init_lora_weights=False: PEFT draws B at random too, so the adapter is not a no-op
    pm = peft.get_peft_model(base, peft.LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "o_proj"],
                                                   init_lora_weights=False))
    pm.save_pretrained(tmp_path / "adapter")
    trainer = make_trainer(tiny_model_dir, toy_data, tmp_path, 1,
                           [f"actor_rollout_ref.model.lora_adapter_path={tmp_path / 'adapter'}"])
    module = trainer._trainer.actor_model
    assert module.lora["lora_rank"] == 4 and module.lora["lora_alpha"] == 8
    ids = torch.randint(0, 304, (2, 9), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        want = pm(input_ids=ids).logits
        got = trainer.model(ids)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    metrics = trainer.step(next(batches(trainer)))
    assert math.isfinite(metrics["actor/grad_norm"])


def test_lora_merge_generates_from_a_merged_copy(untied_model_dir, toy_data, tmp_path):
    """actor_rollout_ref.model.lora.merge=true (verl's key): the engine generates from its own plain copy with the
    adapters folded in at every hand-over; its log-probs then equal the trainer's up to the merge's rounding."""
    trainer = make_trainer(untied_model_dir, toy_data, tmp_path, 3, ["actor_rollout_ref.model.lora.merge=true",
                                                                     "actor_rollout_ref.actor.optim.lr=0.1"])
    actor, engine_model = trainer._trainer.actor_model, trainer._trainer.engine.model
    assert engine_model.lora is None and actor.lora is not None
    loader = batches(trainer)
    for _ in range(3):
        metrics = trainer.step(next(loader))
        assert metrics["training/rollout_probs_diff_max"] <= MERGE_TOLERANCE, metrics["training/rollout_probs_diff_max"]
    # The hand-over after the last update left the engine holding exactly the merged weights.
    merged = actor.merged_state()
    for name, tensor in engine_model.state_dict().items():
        torch.testing.assert_close(tensor, merged[name], rtol=0, atol=0, msg=name)


@pytest.mark.parametrize("cpu_bf16", ["0", "1"])
def test_lora_on_the_default_dtypes(untied_model_dir, toy_data, tmp_path, monkeypatch, cpu_bf16):
    """No dtype pinned (fsdp_config.dtype=auto), both resolutions of auto: bf16 compute copies (with their adapters,
    refreshed from the fp32 masters after every step) on a CPU with bf16 units, fp32 without. The actor and the critic
    train their adapters; the fp32 master of the base stays bit for bit."""
    monkeypatch.setenv("VERL_CPU_BF16", cpu_bf16)
    overrides = [o for o in toy_overrides(untied_model_dir, str(tmp_path), "gae", 2) if "dtype=" not in o]
    cfg = RLConfig(overrides=[*overrides, *LORA, "critic.model.lora_rank=4", "actor_rollout_ref.actor.optim.lr=0.1",
                              "actor_rollout_ref.actor.use_kl_loss=true"])
    trainer = PPOTrainer(config=cfg, reward_fn=digit_fraction, train_dataset=toy_data["train"])
    actor = trainer._trainer.actor_model
    assert trainer._trainer.engine.model.dtype == ("bfloat16" if cpu_bf16 == "1" else "float32")
    base = verl.models.load_model(untied_model_dir).state_dict()
    loader = batches(trainer)
    for _ in range(2):
        metrics = trainer.step(next(loader))
        for key in ("actor/grad_norm", "critic/grad_norm", "actor/kl_loss", "training/rollout_probs_diff_max"):
            assert math.isfinite(metrics[key]), (key, metrics[key])
    assert metrics["actor/kl_loss"] > 0  # the reference (adapters off) and the adapted policy differ
    state = actor.state_dict()
    assert state["model.layers.0.self_attn.q_proj.weight"].dtype == torch.float32
    for name, tensor in base.items():
        assert torch.equal(state[name], tensor), name
    # The engine generates from the compute copy, whose adapters are the masters' after the last update.
    engine = trainer._trainer.engine.model.adapter_state()
    for name, master in actor.adapter_state().items():
        torch.testing.assert_close(engine[name].float(), master.to(engine[name].dtype).float(), rtol=0, atol=0)
