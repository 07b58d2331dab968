"""One side of bench_grpo_step.py in its own process: ``python grpo_sides.py verl|trl SPEC.json OUT.json``.

``verl``: verl-cpp's ``verl.PPOTrainer`` (verl-cpp's venv). ``trl``: ``trl.GRPOTrainer`` (the TRL venv; this side
never imports verl-cpp's ``verl``). Both read the checkpoint and tokenizer the parent wrote, train on the same
prompt texts in the same order (prompts[k * P:(k + 1) * P] at step k), with the same hyperparameters and the same
toy reward on token ids, and write per-step records:

    step_s         wall time of the optimizer step (TRL: on_step_begin -> on_step_end callbacks; verl-cpp: around
                   PPOTrainer.step, which is the whole C++ step)
    generation_s   sampling the responses (TRL: GRPOTrainer._generate_single_turn, i.e. transformers' generate and
                   the EOS mask; verl-cpp: timing_s/gen)
    log_prob_s     teacher-forced log-prob passes before the update (TRL: _get_per_token_logps_and_entropies called
                   outside _compute_loss -- none at all when on-policy, num_iterations=1, as here: TRL then uses the
                   detached log-probs of the loss's own forward as the old ones; verl-cpp: timing_s/old_log_prob +
                   timing_s/ref, verl's recomputation -- skipped here too, as TRL skips it: with one epoch of one
                   mini-batch cut as the pass cuts it, the update's own forward gives the old log-probs bit for bit,
                   actor.old_log_prob_from_update)
    update_s       loss forward + backward + clip + optimizer step (TRL: the step minus _generate_and_score_completions;
                   verl-cpp: timing_s/update_actor + timing_s/update_weights)
    reward_mean    mean toy reward of the step's P * n responses (recorded by the reward function itself)
    seqlens        prompt + response tokens of each sample (the FLOP estimate's input)

Optional spec keys (benchmarks/lora/bench_lora_grpo.py; absent, each side runs as bench_grpo_step.py wants it):

    vocab_size       the toy reward's vocabulary when ``model`` is not one of grpo_common.MODELS (a real checkpoint)
    lora_rank, lora_alpha, target_modules
                     LoRA adapters (verl-cpp: actor_rollout_ref.model.lora_*; TRL: peft.LoraConfig, task CAUSAL_LM)
    ignore_eos       generate exactly max_tokens per sample on a real model (verl-cpp: actor_rollout_ref.rollout.
                     ignore_eos=true; TRL: generation_kwargs min_new_tokens = max_tokens, which masks the EOS ids)
    verl_overrides   more RLConfig overrides for the verl-cpp side

and the result then also holds ``trainable_params`` and ``optimizer_state_bytes`` (AdamW's exp_avg + exp_avg_sq).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time

import grpo_common as common


def _record_rewards(records: list, rewards: list[float], seqlens: list[int]) -> None:
    records.append({"reward_mean": sum(rewards) / len(rewards), "seqlens": seqlens})


def _vocab_size(spec: dict) -> int:
    """The toy reward's vocabulary: the spec's ``vocab_size`` (a real checkpoint) or the benchmark model's."""
    return spec["vocab_size"] if "vocab_size" in spec else common.MODELS[spec["model"]]["vocab_size"]


# ---- verl-cpp ----------------------------------------------------------------------------------------------------

def run_verl(spec: dict) -> dict:
    import numpy as np
    import torch

    import verl
    from verl import PPOTrainer
    from verl.protocol import DataProto
    from verl.workers.reward_manager.abstract import AbstractRewardManager, place_scores

    torch.set_num_threads(spec["threads"])
    vocab = _vocab_size(spec)
    tokenizer = verl.load_tokenizer(spec["checkpoint"])
    prompt_ids = tokenizer.batch_encode(spec["prompts"], add_special_tokens=False)
    pad = tokenizer.pad_token_id
    width = max(len(p) for p in prompt_ids)
    reward_calls: list[dict] = []

    class TokenIdReward(AbstractRewardManager):
        """The toy reward on each response's valid token ids, placed on its last valid token."""

        def __init__(self, tokenizer, num_examine=0, compute_score=None, reward_fn_key="data_source", **kwargs):
            self.tokenizer = tokenizer

        def __call__(self, data: DataProto, return_dict: bool = False):
            responses = data.batch["responses"]
            prompt_width = data.batch["prompts"].shape[-1]
            mask = data.batch["attention_mask"]
            lengths = mask[:, prompt_width:].sum(-1).tolist()
            prompt_lengths = mask[:, :prompt_width].sum(-1).tolist()
            rows = responses.tolist()
            scores = [common.toy_reward(row[:n], vocab) for row, n in zip(rows, lengths)]
            reward = torch.zeros(responses.shape, dtype=torch.float32)
            place_scores(reward, scores, lengths)
            _record_rewards(reward_calls, scores, [int(p + r) for p, r in zip(prompt_lengths, lengths)])
            return {"reward_tensor": reward, "reward_extra_info": {}} if return_dict else reward

    P = spec["prompts_per_step"]
    total_steps = spec["warmup"] + spec["steps"]
    # fsdp_config.dtype per trainer: float32 (no mixed precision: the same precision as TRL's fp32 side) unless the
    # spec asks for more; several dtypes run as several trainers in this one process, their steps alternating.
    compute_dtypes = spec.get("compute_dtypes", ["float32"])
    trainers = {dtype: PPOTrainer(config=_verl_config(spec, width, total_steps, dtype),
                                  reward_fn=TokenIdReward(tokenizer), tokenizer=tokenizer) for dtype in compute_dtypes}

    by_dtype: dict[str, list] = {dtype: [] for dtype in compute_dtypes}
    for k in range(total_steps):
        ids = prompt_ids[k * P:(k + 1) * P]
        input_ids = torch.full((P, width), pad, dtype=torch.long)
        attention_mask = torch.zeros((P, width), dtype=torch.long)
        for i, p in enumerate(ids):
            input_ids[i, width - len(p):] = torch.tensor(p)
            attention_mask[i, width - len(p):] = 1
        position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0)
        for dtype, trainer in trainers.items():
            batch = DataProto.from_single_dict({
                "input_ids": input_ids, "attention_mask": attention_mask, "position_ids": position_ids,
                "data_source": np.array(["toy"] * P, dtype=object),
                "reward_model": np.array([{"ground_truth": ""} for _ in range(P)], dtype=object)})
            t0 = time.perf_counter()
            metrics = trainer.step(batch)
            step_s = time.perf_counter() - t0
            t = {key[len("timing_s/"):]: float(v) for key, v in metrics.items() if key.startswith("timing_s/")}
            record = dict(reward_calls[-1], step_s=step_s, generation_s=t.get("gen", 0.0),
                          log_prob_s=t.get("old_log_prob", 0.0) + t.get("ref", 0.0),
                          update_s=t.get("update_actor", 0.0) + t.get("update_weights", 0.0),
                          timing=t,
                          trainer_mfu_actor=float(metrics.get("perf/mfu/actor", float("nan"))),
                          rollout_probs_diff_max=float(metrics.get("training/rollout_probs_diff_max", float("nan"))),
                          response_length_mean=float(metrics.get("response_length/mean", float("nan"))))
            by_dtype[dtype].append(record)
            print(f"[verl-cpp {dtype}] step {k + 1}/{total_steps}: {step_s:.2f} s, reward {record['reward_mean']:.3f}",
                  file=sys.stderr, flush=True)
    out = {"side": "verl", "steps": by_dtype[compute_dtypes[0]], "by_dtype": by_dtype,
           "prompt_tokens": [len(p) for p in prompt_ids]}
    trainer = trainers[compute_dtypes[0]]._trainer
    module = trainer.actor_model
    out["trainable_params"] = (sum(t.numel() for t in module.adapter_state().values()) if spec.get("lora_rank")
                               else sum(t.numel() for t in module.state_dict().values()))
    out["optimizer_state_bytes"] = int(trainer.optimizer_state_bytes("actor"))
    return out


def _verl_config(spec: dict, width: int, total_steps: int, compute_dtype: str):
    from verl import RLConfig

    P, n = spec["prompts_per_step"], spec["n"]
    micro = spec["micro_batch"]
    return RLConfig(
        algorithm="grpo", model=spec["checkpoint"], batch_size=P, n=n, learning_rate=spec["lr"],
        max_prompt_length=width, max_response_length=spec["max_tokens"], seed=spec["seed"],
        overrides=[
            # one update per batch: one epoch, one mini-batch of the whole batch, token-mean (TRL's "dapo")
            "actor_rollout_ref.actor.ppo_epochs=1", f"actor_rollout_ref.actor.ppo_mini_batch_size={P}",
            f"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu={micro}",
            f"actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu={micro}",
            "actor_rollout_ref.actor.loss_agg_mode=token-mean", "actor_rollout_ref.actor.clip_ratio=0.2",
            "actor_rollout_ref.actor.clip_ratio_low=0.2", "actor_rollout_ref.actor.clip_ratio_high=0.2",
            "actor_rollout_ref.actor.use_kl_loss=false", "algorithm.use_kl_in_reward=false",  # beta = 0: no reference
            "actor_rollout_ref.actor.entropy_coeff=0", "actor_rollout_ref.actor.grad_clip=1.0",
            "actor_rollout_ref.actor.optim.weight_decay=0.0", "actor_rollout_ref.actor.optim.lr_warmup_steps=0",
            "actor_rollout_ref.model.enable_gradient_checkpointing="
            f"{str(spec.get('gradient_checkpointing', False)).lower()}",
            "actor_rollout_ref.actor.use_dynamic_bsz=false",
            # one epoch of one mini-batch, cut as the log-prob pass cuts it: by default the update's own forward
            # gives the old log-probs and the pass is skipped (false: it runs, as verl's trainer always does)
            "actor_rollout_ref.actor.old_log_prob_from_update="
            f"{str(spec.get('old_log_prob_from_update', True)).lower()}",
            "actor_rollout_ref.rollout.temperature=1.0", "actor_rollout_ref.rollout.top_p=1.0",
            "actor_rollout_ref.rollout.top_k=-1", f"actor_rollout_ref.rollout.max_num_seqs={max(256, P * n)}",
            "algorithm.norm_adv_by_std_in_grpo=true",
            "trainer.total_epochs=1", f"trainer.total_training_steps={total_steps}", "trainer.save_freq=-1",
            "trainer.test_freq=-1", "trainer.val_before_train=false", "trainer.resume_mode=disable",
            "trainer.logger=[]", f"trainer.device={spec.get('device', 'cpu')}",
            f"actor_rollout_ref.actor.fsdp_config.dtype={compute_dtype}", *_verl_extra_overrides(spec)])


def _verl_extra_overrides(spec: dict) -> list[str]:
    """The optional spec keys' overrides (none for bench_grpo_step.py's specs)."""
    out = []
    if spec.get("lora_rank"):
        out += [f"actor_rollout_ref.model.lora_rank={spec['lora_rank']}",
                f"actor_rollout_ref.model.lora_alpha={spec.get('lora_alpha', 2 * spec['lora_rank'])}",
                f"actor_rollout_ref.model.target_modules={spec.get('target_modules', 'all-linear')}"]
    if spec.get("ignore_eos"):
        out.append("actor_rollout_ref.rollout.ignore_eos=true")
    return out + list(spec.get("verl_overrides", []))


# ---- TRL ---------------------------------------------------------------------------------------------------------

def run_trl(spec: dict) -> dict:
    import torch
    import transformers
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    assert "verl" not in sys.modules, "the TRL side must not import verl-cpp"
    torch.set_num_threads(spec["threads"])
    vocab = _vocab_size(spec)
    tokenizer = transformers.AutoTokenizer.from_pretrained(spec["checkpoint"])
    model = transformers.AutoModelForCausalLM.from_pretrained(spec["checkpoint"], dtype=torch.float32,
                                                              attn_implementation="sdpa")
    reward_calls: list[dict] = []
    prompt_len = {}

    def toy_reward(prompts, completions, completion_ids, **kwargs):
        scores = [common.toy_reward(ids, vocab) for ids in completion_ids]
        _record_rewards(reward_calls, scores, [prompt_len[p] + len(c) for p, c in zip(prompts, completion_ids)])
        return scores

    P, n = spec["prompts_per_step"], spec["n"]
    micro = spec["micro_batch"]
    total_steps = spec["warmup"] + spec["steps"]
    prompts = spec["prompts"][:total_steps * P]
    prompt_ids = tokenizer(text=prompts)["input_ids"]
    prompt_len.update({p: len(ids) for p, ids in zip(prompts, prompt_ids)})
    out_dir = tempfile.mkdtemp(prefix="grpo-bench-trl-")
    args = GRPOConfig(
        output_dir=out_dir, use_cpu=True, bf16=False, fp16=False, seed=spec["seed"], data_seed=spec["seed"],
        # 16 prompts x 8 = 128 completions per optimizer step, micro-batches of `micro`, one update per batch
        per_device_train_batch_size=micro, gradient_accumulation_steps=P * n // micro, num_generations=n,
        num_iterations=1, max_steps=total_steps, shuffle_dataset=False,
        max_completion_length=spec["max_tokens"], temperature=1.0, top_p=1.0, top_k=0,
        learning_rate=spec["lr"], lr_scheduler_type="constant", warmup_steps=0, weight_decay=0.0,
        max_grad_norm=1.0, beta=0.0, epsilon=0.2, loss_type="dapo", scale_rewards="group",
        gradient_checkpointing=False, logging_steps=1, report_to="none", save_strategy="no",
        disable_tqdm=True, dataloader_num_workers=0, log_completions=False,
        # ignore_eos: MinNewTokensLengthLogitsProcessor masks every EOS id until max_tokens, so no completion ends early
        generation_kwargs={"min_new_tokens": spec["max_tokens"]} if spec.get("ignore_eos") else None)
    peft_config = None
    if spec.get("lora_rank"):
        import peft

        peft_config = peft.LoraConfig(r=spec["lora_rank"], lora_alpha=spec.get("lora_alpha", 2 * spec["lora_rank"]),
                                      target_modules=spec.get("target_modules", "all-linear"), lora_dropout=0.0,
                                      task_type="CAUSAL_LM")
    trainer = GRPOTrainer(model=model, reward_funcs=toy_reward, args=args,
                          train_dataset=Dataset.from_dict({"prompt": prompts}), processing_class=tokenizer,
                          **({"peft_config": peft_config} if peft_config is not None else {}))

    acc = {"generation": 0.0, "log_prob": 0.0, "prepare": 0.0}
    in_loss = [False]

    def timed(name, fn, only_outside_loss=False):
        def wrapper(*a, **kw):
            if only_outside_loss and in_loss[0]:
                return fn(*a, **kw)
            t0 = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                acc[name] += time.perf_counter() - t0
        return wrapper

    def loss_flag(fn):
        def wrapper(*a, **kw):
            in_loss[0] = True
            try:
                return fn(*a, **kw)
            finally:
                in_loss[0] = False
        return wrapper

    trainer._generate_single_turn = timed("generation", trainer._generate_single_turn)
    trainer._get_per_token_logps_and_entropies = timed("log_prob", trainer._get_per_token_logps_and_entropies,
                                                       only_outside_loss=True)
    trainer._generate_and_score_completions = timed("prepare", trainer._generate_and_score_completions)
    trainer._compute_loss = loss_flag(trainer._compute_loss)
    steps: list[dict] = []

    class StepTimer(transformers.TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            for key in acc:
                acc[key] = 0.0
            self.t0 = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            step_s = time.perf_counter() - self.t0
            record = dict(reward_calls[-1], step_s=step_s, generation_s=acc["generation"], log_prob_s=acc["log_prob"],
                          update_s=step_s - acc["prepare"], prepare_s=acc["prepare"])
            steps.append(record)
            print(f"[TRL] step {len(steps)}/{total_steps}: {step_s:.2f} s, reward {record['reward_mean']:.3f}",
                  file=sys.stderr, flush=True)

    trainer.add_callback(StepTimer())
    trainer.train()
    assert len(reward_calls) == total_steps, f"TRL generated {len(reward_calls)} times in {total_steps} steps"
    out = {"side": "trl", "steps": steps, "prompt_tokens": [len(p) for p in prompt_ids]}
    out["trainable_params"] = sum(p.numel() for p in trainer.model.parameters() if p.requires_grad)
    state = trainer.optimizer.state  # AdamW's moments (its scalar step counters left out, as verl-cpp counts)
    out["optimizer_state_bytes"] = sum(t.numel() * t.element_size() for per_param in state.values()
                                       for key, t in per_param.items() if key in ("exp_avg", "exp_avg_sq"))
    return out


def main() -> None:
    side, spec_path, out_path = sys.argv[1:4]
    with open(spec_path, encoding="utf-8") as f:
        spec = json.load(f)
    result = run_verl(spec) if side == "verl" else run_trl(spec)
    import resource

    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(result, f)


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main()
