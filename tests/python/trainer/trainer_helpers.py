"""Helpers for the trainer tests: a tiny random Qwen2 checkpoint with the arith demo's real 304-token BPE
tokenizer, a toy prompt dataset in verl's schema, and a small-batch config."""

from __future__ import annotations

import json
import os
import shutil

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TOKENIZER_DIR = os.path.join(ROOT, "examples", "arith", "tokenizer")


def write_tiny_model(path: str, seed: int = 0, max_position_embeddings: int = 128) -> str:
    from verl.models import safetensors
    from verl.models.transformer import CausalLM

    with open(os.path.join(TOKENIZER_DIR, "tokenizer.json"), encoding="utf-8") as f:
        tok = json.load(f)
    added = {t["content"]: t["id"] for t in tok["added_tokens"]}
    config = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "vocab_size": 304, "hidden_size": 32,
              "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
              "max_position_embeddings": max_position_embeddings, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
              "tie_word_embeddings": True, "eos_token_id": added["<|im_end|>"], "pad_token_id": added["<|endoftext|>"],
              "torch_dtype": "float32"}
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(config, f)
    torch.manual_seed(seed)
    model = CausalLM(config)
    # transformers' initialisation (normal(0, initializer_range=0.02), norms at 1): a near-uniform next-token
    # distribution, so sampled responses vary (torch's default init makes a tied-embedding model emit one token).
    with torch.no_grad():
        for name, param in model.state_dict().items():
            if name.endswith("norm.weight"):
                param.fill_(1.0)
            elif name.endswith(".bias"):
                param.zero_()
            else:
                param.normal_(0.0, 0.02)
    safetensors.save_file({k: v.contiguous() for k, v in model.state_dict().items()},
                          os.path.join(path, "model.safetensors"))
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(TOKENIZER_DIR, name), os.path.join(path, name))
    return path


def write_untied_model(path: str) -> str:
    """The tiny model with an untied lm_head of std 0.5: what LoRA tests train. Adapters on the decoder cannot touch
    the head or the final norm, and the norm fixes |h| (sqrt(hidden)), so a token's logit can move by at most
    |h| |w_token|: with the tied 0.02-std embedding that is 0.64 and no token can be made likely (GRPO's digit fraction
    stays near 0.02 whatever the adapters do); with head rows of norm ~2.8 the digits can take the distribution over."""
    from verl.models import safetensors

    write_tiny_model(path)
    config_path = os.path.join(path, "config.json")
    with open(config_path) as f:
        config = json.load(f)
    config["tie_word_embeddings"] = False
    with open(config_path, "w") as f:
        json.dump(config, f)
    weights = safetensors.load_file(os.path.join(path, "model.safetensors"))
    weights["lm_head.weight"] = 0.5 * torch.randn(config["vocab_size"], config["hidden_size"],
                                                  generator=torch.Generator().manual_seed(0))
    safetensors.save_file(weights, os.path.join(path, "model.safetensors"))
    return path


def write_rows(path: str, n: int, offset: int = 0) -> str:
    with open(path, "w") as f:
        for i in range(n):
            a, b = (3 * i + offset) % 50, (7 * i + 1 + offset) % 50
            row = {"data_source": "toy", "prompt": [{"role": "user", "content": f"Compute {a}+{b}."}],
                   "reward_model": {"style": "rule", "ground_truth": str(a + b)}, "extra_info": {"index": i}}
            f.write(json.dumps(row) + "\n")
    return path


def toy_overrides(model_dir: str, out_dir: str, estimator: str = "grpo", steps: int = 2) -> list[str]:
    return [
        f"actor_rollout_ref.model.path={model_dir}",
        f"algorithm.adv_estimator={estimator}",
        "data.max_prompt_length=24", "data.max_response_length=8", "data.train_batch_size=4", "data.shuffle=false",
        "actor_rollout_ref.rollout.n=4", "actor_rollout_ref.rollout.max_num_seqs=64",
        "actor_rollout_ref.actor.ppo_mini_batch_size=2", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8",
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=16",
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=16",
        "critic.ppo_micro_batch_size_per_gpu=8", "critic.forward_micro_batch_size_per_gpu=16",
        "actor_rollout_ref.actor.optim.lr=0.01", "critic.optim.lr=0.01",
        "actor_rollout_ref.model.enable_gradient_checkpointing=false",
        "critic.model.enable_gradient_checkpointing=false",
        "trainer.logger=[console]", "trainer.val_before_train=false", "trainer.total_epochs=1",
        f"trainer.total_training_steps={steps}", f"trainer.default_local_dir={out_dir}/ckpt", "trainer.device=cpu",
        "trainer.project_name=proj", "trainer.experiment_name=exp",
        # fp32 compute (no mixed precision), so the exact-agreement checks stay exact and CPU runs stay fast (bf16
        # matmuls are ~50x slower than fp32 on an AVX2-only CPU); verl's default bf16 compute is tested in
        # tests/cpp/workers/test_mixed_precision.cpp (the trainer) and tests/python/workers/test_mixed_precision.py.
        "actor_rollout_ref.actor.fsdp_config.dtype=float32", "actor_rollout_ref.ref.fsdp_config.dtype=float32",
        "critic.fsdp.dtype=float32",
    ]


def check_ppo_takes_checkpoint(actor: str, out_dir: str, train_file: str) -> None:
    """A trainer's ``global_step_N/actor`` is a PPO actor as it is: GRPO loads exactly its weights and steps on them."""
    import math

    import torch

    import verl
    from verl import PPOTrainer, RLConfig

    model = verl.models.load_model(actor)
    ppo = PPOTrainer(config=RLConfig(overrides=toy_overrides(actor, out_dir, "grpo", 1)),
                     reward_fn=lambda response: float(len(response)), train_dataset=train_file)
    for name, tensor in ppo.model.state_dict().items():
        assert torch.equal(tensor, model.state_dict()[name]), name
    metrics = ppo.step([ppo.train_dataset[i] for i in range(4)])
    assert math.isfinite(metrics["actor/grad_norm"])


def write_jsonl(path, rows) -> str:
    """Rows (objects, or raw lines as strings) into a JSONL file; returns its path."""
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write((row if isinstance(row, str) else json.dumps(row)) + "\n")
    return str(path)


def pair_rows(n: int) -> list[dict]:
    """n arithmetic preference pairs: the right sum chosen, a wrong one rejected."""
    rows = []
    for i in range(n):
        a, b = (7 * i + 3) % 50, (11 * i + 5) % 50
        rows.append({"prompt": [{"role": "user", "content": f"Compute {a}+{b}."}], "chosen": str(a + b),
                     "rejected": str(a + b + 1 + i % 3)})
    return rows
