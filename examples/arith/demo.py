"""`make demo-arith`: SFT warm start, then GRPO, on the built-in arithmetic task, with a tiny Qwen2 model on the CPU.

1. task   -- 4,000 training and 400 held-out problems "Compute a+b." / "Compute a-b." with operands 0..49
             (examples/arith/arith_task.py, verl's dataset schema, disjoint splits).
2. model  -- a randomly initialised Qwen2-architecture decoder (2 layers, hidden 64, ~0.1 M parameters) with the
             task's 304-token byte-level BPE tokenizer, written as a Hugging Face checkpoint.
3. SFT    -- verl.SFTTrainer on demonstrations from an imperfect teacher: 4 per training problem, the right number,
             but 60 % of them end with a period ("85."), a formatting habit the exact-answer check rejects.
             Imitation learns the arithmetic and the habit with it.
4. GRPO   -- verl.PPOTrainer on the training prompts, 8 samples each, reward 1 for exactly the answer: RL optimises
             what the verifier measures, which imitation of the teacher could not.
5. report -- held-out accuracy before and after GRPO, greedy (verl's val-core/arith/acc/mean@1) and of answers
             sampled at temperature 1, a few answers side by side, the metrics JSONL and a PNG of reward, response
             length and held-out accuracy.

Everything is seeded: the same machine gives the same numbers. Run `python examples/arith/demo.py --help`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch  # noqa: E402

import arith_task  # noqa: E402

TOKENIZER_DIR = os.path.join(HERE, "tokenizer")
VAL_KEY = "val-core/arith/acc/mean@1"  # verl's validation: greedy (val_kwargs), one answer per problem
SAMPLED = 4  # the report's sampled accuracy: answers per problem at temperature 1
N_TRAIN, N_TEST, MAX_OPERAND = 4000, 400, 49  # the task's size: problems per split, operands 0..MAX_OPERAND


def model_config(tokenizer) -> dict:
    return {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "vocab_size": 304, "hidden_size": 64,
            "intermediate_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
            "max_position_embeddings": 64, "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": True,
            "eos_token_id": tokenizer.eos_token_id, "pad_token_id": tokenizer.pad_token_id, "torch_dtype": "float32"}


def write_initial_model(path: str, tokenizer, seed: int) -> int:
    """Writes a random model with transformers' initialisation (normal(0, 0.02), norms at 1, biases at 0) to
    ``path``; returns its parameter count."""
    import verl.models as models

    model = models.init_weights(models.CausalLM(model_config(tokenizer)), seed)
    models.save_pretrained(model, path, tokenizer_dir=TOKENIZER_DIR)
    return sum(p.numel() for p in model.parameters())


def sft(args, data: dict, init_dir: str, out_dir: str) -> str:
    from verl import SFTTrainer

    trainer = SFTTrainer(config={
        "model.path": init_dir, "data.train_files": data["sft"], "data.train_batch_size": 64,
        "data.use_dynamic_bsz": False, "data.micro_batch_size_per_gpu": 64, "data.max_length": 64,
        "data.seed": args.seed, "model.enable_gradient_checkpointing": False,
        "optim.lr": 2e-3, "optim.lr_warmup_steps": 20, "optim.lr_scheduler_type": "cosine",
        "optim.weight_decay": 0.01, "trainer.total_epochs": 1000, "trainer.total_training_steps": args.sft_steps,
        "trainer.default_local_dir": out_dir, "trainer.resume_mode": "disable", "trainer.seed": args.seed,
        "trainer.logger": ["console"], "trainer.project_name": "arith-demo", "trainer.experiment_name": "sft",
        "trainer.device": "cpu"})
    trainer.fit()
    return trainer.hf_model_path


def exact_answer(data_source: str, solution_str: str, ground_truth: str, extra_info=None) -> dict:
    """verl's compute_score form; the "acc" entry gives verl's val-core/arith/acc/mean@N metrics."""
    score = arith_task.compute_score(data_source, solution_str, ground_truth, extra_info)
    return {"score": score, "acc": score}


def grpo(args, data: dict, model_dir: str, out_dir: str):
    from verl import PPOTrainer, RLConfig

    config = RLConfig(
        algorithm="grpo", model=model_dir, train_files=data["train"], val_files=data["test"],
        batch_size=args.prompts_per_step, n=8, learning_rate=args.rl_lr, max_prompt_length=32,
        max_response_length=6, seed=args.seed,
        overrides=[
            f"actor_rollout_ref.actor.ppo_mini_batch_size={args.prompts_per_step}",
            f"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu={args.prompts_per_step * 8}",
            f"actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu={args.prompts_per_step * 8}",
            "actor_rollout_ref.model.enable_gradient_checkpointing=false",
            # fp32 compute on every CPU: verl's default (auto) picks bf16 where the CPU has bf16 matrix units, and
            # the demo's numbers would then depend on the machine.
            "actor_rollout_ref.actor.fsdp_config.dtype=float32",
            "actor_rollout_ref.actor.use_kl_loss=false", "actor_rollout_ref.actor.entropy_coeff=0",
            "actor_rollout_ref.rollout.max_num_seqs=512", f"data.val_batch_size={N_TEST}",
            "trainer.total_epochs=1000", f"trainer.total_training_steps={args.rl_steps}",
            f"trainer.test_freq={args.test_freq}", "trainer.val_before_train=true", "trainer.save_freq=-1",
            "trainer.resume_mode=disable", f"trainer.default_local_dir={out_dir}",
            "trainer.logger=[console]", "trainer.project_name=arith-demo", "trainer.experiment_name=grpo",
            "trainer.device=cpu"])
    trainer = PPOTrainer(config=config, reward_fn=exact_answer)
    trainer.fit()
    return trainer


def answers(llm, prompts: list[str], n: int = 1, temperature: float = 0.0, seed: int = 0) -> list[list[str]]:
    """``n`` answers of the rollout engine ``llm`` to each prompt (greedy when temperature is 0). Each prompt has
    its own seeds (sample k of prompt i: seed + i * n + k): one seed for all would draw every prompt's samples from
    the same random numbers, and the sampled accuracy would be a correlated, seed-dependent estimate."""
    from verl.rollout import SamplingParams

    params = [SamplingParams(n=n, temperature=temperature, max_tokens=6, seed=seed + i * n) for i in range(len(prompts))]
    outs = llm.generate(prompts, params)
    return [[c.text.strip() for c in o.outputs] for o in outs]


def accuracy(answers_per_problem: list[list[str]], truth: list[str]) -> float:
    return sum(a == t for answers_, t in zip(answers_per_problem, truth) for a in answers_) / sum(
        len(a) for a in answers_per_problem)


def main(argv: list[str] | None = None) -> int:
    """Runs the demo; metrics files go to <workdir>/logs unless VERL_FILE_LOGGER_ROOT says otherwise."""
    saved, threads = os.environ.get("VERL_FILE_LOGGER_ROOT"), torch.get_num_threads()
    try:
        return _run(argv)
    finally:  # callers (tests) keep their environment and thread count
        torch.set_num_threads(threads)
        if saved is None:
            os.environ.pop("VERL_FILE_LOGGER_ROOT", None)
        else:
            os.environ["VERL_FILE_LOGGER_ROOT"] = saved


def _run(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(description="SFT warm start + GRPO on the arithmetic task (CPU).")
    parser.add_argument("--workdir", default=os.path.join("build", "demo"), help="where data, checkpoints, logs go")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: all cores)")
    parser.add_argument("--sft-steps", type=int, default=3000)
    parser.add_argument("--rl-steps", type=int, default=150)
    parser.add_argument("--rl-lr", type=float, default=3e-4)
    parser.add_argument("--prompts-per-step", type=int, default=32)
    parser.add_argument("--test-freq", type=int, default=25)
    parser.add_argument("--teacher-period-rate", type=float, default=0.6,
                        help="share of the teacher's demonstrations that end the answer with a period")
    parser.add_argument("--sft-copies", type=int, default=4, help="teacher demonstrations per training problem")
    args = parser.parse_args(argv)
    if args.threads > 0:
        torch.set_num_threads(args.threads)

    import verl

    start = time.perf_counter()
    work = os.path.abspath(args.workdir)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    os.environ.setdefault("VERL_FILE_LOGGER_ROOT", os.path.join(work, "logs"))

    print(f"== 1/4 task: arithmetic, operands 0..{MAX_OPERAND} -> {work}/data")
    data = arith_task.write_dataset(os.path.join(work, "data"), n_train=N_TRAIN, n_test=N_TEST, seed=args.seed,
                                    max_operand=MAX_OPERAND, teacher_period_rate=args.teacher_period_rate,
                                    sft_copies=args.sft_copies)

    tokenizer = verl.load_tokenizer(TOKENIZER_DIR)
    init_dir = os.path.join(work, "init")
    n_params = write_initial_model(init_dir, tokenizer, args.seed)
    print(f"== 2/4 SFT warm start: Qwen2 2x64 ({n_params / 1e3:.0f} k parameters), {args.sft_steps} steps of 64 "
          f"demonstrations; {args.teacher_period_rate:.0%} of the teacher's answers end with a period")
    sft_model = sft(args, data, init_dir, os.path.join(work, "sft"))
    sft_done = time.perf_counter()

    print(f"== 3/4 GRPO: {args.rl_steps} steps of {args.prompts_per_step} prompts x 8 samples, reward = exact answer")
    trainer = grpo(args, data, sft_model, os.path.join(work, "grpo"))
    grpo_done = time.perf_counter()

    from verl.utils.tracking import read_metrics

    metrics_path = trainer.tracker.metrics_path
    curve = [(step, m[VAL_KEY]) for step, m in read_metrics(metrics_path) if VAL_KEY in m]
    before, after = curve[0][1], curve[-1][1]
    final_dir = os.path.join(work, "grpo_model")
    verl.models.save_pretrained(trainer.model, final_dir, tokenizer_dir=TOKENIZER_DIR)

    print("== 4/4 report")
    from verl.rollout import LLM

    from verl.utils.dataset.rl_dataset import read_rows

    test = [row for row, _ in read_rows(data["test"])]  # the held-out rows validation scored, as written
    truth = [row["reward_model"]["ground_truth"] for row in test]
    prompts = [tokenizer.apply_chat_template(row["prompt"], add_generation_prompt=True) for row in test]
    llm_sft = LLM(sft_model, tokenizer, eos_token_id=tokenizer.eos_token_id)
    llm_rl = LLM(trainer.model, tokenizer, eos_token_id=tokenizer.eos_token_id)  # the trained weights, in memory
    greedy_sft, greedy_rl = answers(llm_sft, prompts), answers(llm_rl, prompts)
    sampled_sft = accuracy(answers(llm_sft, prompts, SAMPLED, 1.0, args.seed), truth)
    sampled_rl = accuracy(answers(llm_rl, prompts, SAMPLED, 1.0, args.seed), truth)
    for i in [i for i, (a, b) in enumerate(zip(greedy_sft, greedy_rl)) if a != b][:5]:
        print(f"   {test[i]['prompt'][0]['content']:<16} truth {truth[i]:>4}   after SFT {greedy_sft[i][0]:>5}   "
              f"after GRPO {greedy_rl[i][0]:>5}")
    print(f"   held-out accuracy ({len(test)} problems)   after SFT   after GRPO")
    print(f"     greedy                        {before:9.1%}   {after:10.1%}   ({(after - before) * 100:+.1f} points)")
    print(f"     sampled (T=1, {SAMPLED} per problem)    {sampled_sft:9.1%}   {sampled_rl:10.1%}   "
          f"({(sampled_rl - sampled_sft) * 100:+.1f} points)")
    print(f"   time: SFT {sft_done - start:.0f} s, GRPO {grpo_done - sft_done:.0f} s, total "
          f"{time.perf_counter() - start:.0f} s")
    print(f"   metrics: {metrics_path}")
    if getattr(trainer, "plot_path", None):
        print(f"   plot:    {trainer.plot_path}")
    with open(os.path.join(work, "summary.json"), "w", encoding="utf-8") as f:
        json.dump({"greedy_acc": {"sft": before, "grpo": after}, "sampled_acc": {"sft": sampled_sft, "grpo": sampled_rl},
                   "val_curve": curve, "seconds": time.perf_counter() - start}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
