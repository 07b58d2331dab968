"""Program-synthesis GRPO with test-case rewards through the local sandbox, with a tiny Qwen2 model on the CPU.

1. task   -- "Write a Python function g(n) that returns n times 7." and six other operations, constants 2..19,
             four function and four argument names (examples/code/code_task.py); each problem has five hidden
             function-call test cases. The held-out problems use (operation, constant) pairs no training
             problem uses.
2. model  -- a randomly initialised Qwen2-architecture decoder with the task's 384-token byte-level BPE tokenizer
             (examples/code/tokenizer), written as a Hugging Face checkpoint.
3. SFT    -- verl.SFTTrainer on demonstrations from an imperfect teacher: half of its programs carry a bug the
             tests reject (an off-by-one constant, a wrong operator, a missing return).
4. GRPO   -- verl.PPOTrainer, 8 programs per prompt, reward = the fraction of the problem's test cases the program
             passes, computed by verl's code scorer (prime_code, as verl's default_compute_score runs it for
             code data sets) with every test case run in verl's LocalSandbox (examples/code/code_reward.py).
5. report -- held-out pass rate (all five tests pass) before and after GRPO: of programs sampled at temperature 1
             (verl's validation, val-core/code_synth/acc/mean@4, and pass@4), the mean fraction of tests passed (the
             reward), greedy, and the sampled programs by kind (right, each teacher bug, other) read back from
             verl's validation dumps; sandbox runs per second; summary.json and a PNG of the training curves.

Everything is seeded: the same machine gives the same numbers. Run `python examples/code/run.py --help`.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch  # noqa: E402

import code_task  # noqa: E402

TOKENIZER_DIR = os.path.join(HERE, "tokenizer")
MAX_PROMPT, MAX_RESPONSE = 32, 16  # tokens: the longest prompt is 27, the longest program 12 (+ end of turn)


def model_config(tokenizer, hidden: int, layers: int) -> dict:
    return {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "vocab_size": 384, "hidden_size": hidden,
            "intermediate_size": 4 * hidden, "num_hidden_layers": layers, "num_attention_heads": 4,
            "num_key_value_heads": 2, "max_position_embeddings": 64, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
            "tie_word_embeddings": True, "eos_token_id": tokenizer.eos_token_id,
            "pad_token_id": tokenizer.pad_token_id, "torch_dtype": "float32"}


def write_initial_model(path: str, tokenizer, args) -> int:
    """Writes a random model with transformers' initialisation (normal(0, 0.02), norms at 1, biases at 0) to
    ``path``; returns its parameter count."""
    import verl.models as models

    model = models.init_weights(models.CausalLM(model_config(tokenizer, args.hidden, args.layers)), args.seed)
    models.save_pretrained(model, path, tokenizer_dir=TOKENIZER_DIR)
    return sum(p.numel() for p in model.parameters())


def sft(args, data: dict, init_dir: str, out_dir: str) -> str:
    from verl import SFTTrainer

    trainer = SFTTrainer(config={
        "model.path": init_dir, "data.train_files": data["sft"], "data.train_batch_size": 64,
        "data.use_dynamic_bsz": False, "data.micro_batch_size_per_gpu": 64,
        "data.max_length": MAX_PROMPT + MAX_RESPONSE, "data.seed": args.seed,
        "model.enable_gradient_checkpointing": False, "optim.lr": args.sft_lr, "optim.lr_warmup_steps": 20,
        "optim.lr_scheduler_type": "cosine", "optim.weight_decay": 0.01, "trainer.total_epochs": 1000,
        "trainer.total_training_steps": args.sft_steps, "trainer.default_local_dir": out_dir,
        "trainer.resume_mode": "disable", "trainer.seed": args.seed, "trainer.logger": ["console"],
        "trainer.project_name": "code-example", "trainer.experiment_name": "sft", "trainer.device": "cpu"})
    trainer.fit()
    return trainer.hf_model_path


def grpo(args, data: dict, model_dir: str, out_dir: str, reward):
    from verl import PPOTrainer, RLConfig

    n, per_step = args.samples_per_prompt, args.prompts_per_step
    config = RLConfig(
        algorithm="grpo", model=model_dir, train_files=data["train"], val_files=data["test"],
        batch_size=per_step, n=n, learning_rate=args.rl_lr, max_prompt_length=MAX_PROMPT,
        max_response_length=MAX_RESPONSE, seed=args.seed,
        overrides=[
            f"actor_rollout_ref.actor.ppo_mini_batch_size={per_step}",
            f"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu={per_step * n}",
            f"actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu={per_step * n}",
            "actor_rollout_ref.model.enable_gradient_checkpointing=false",
            "actor_rollout_ref.actor.use_kl_loss=false", "actor_rollout_ref.actor.entropy_coeff=0",
            "actor_rollout_ref.rollout.max_num_seqs=512", f"data.val_batch_size={args.n_test}",
            # validation samples like training (temperature 1), so its pass rate is the policy's, not greedy's
            "actor_rollout_ref.rollout.val_kwargs.do_sample=true",
            "actor_rollout_ref.rollout.val_kwargs.temperature=1.0",
            f"actor_rollout_ref.rollout.val_kwargs.n={args.val_samples}",
            "trainer.total_epochs=1000", f"trainer.total_training_steps={args.rl_steps}",
            f"trainer.test_freq={args.test_freq}", "trainer.val_before_train=true", "trainer.save_freq=-1",
            "trainer.resume_mode=disable", f"trainer.default_local_dir={out_dir}",
            f"trainer.validation_data_dir={os.path.join(out_dir, 'validation')}",  # the programs, for the report
            "trainer.logger=[console]", "trainer.project_name=code-example", "trainer.experiment_name=grpo",
            "trainer.device=cpu"])
    trainer = PPOTrainer(config=config, reward_fn=reward)
    trainer.fit()
    return trainer


def greedy_programs(llm, prompts: list[str]) -> list[str]:
    """The rollout engine ``llm``'s greedy program for each prompt."""
    from verl.rollout import SamplingParams

    return [o.outputs[0].text for o in llm.generate(prompts, SamplingParams(temperature=0.0, max_tokens=MAX_RESPONSE))]


def kinds_of(validation_file: str, problems: list) -> dict[str, float]:
    """The share of each kind of program (right, a teacher's bug, other) among the programs one validation
    sampled, read back from verl's generation dump (``trainer.validation_data_dir``)."""
    by_text = {code_task.problem_text(p): p for p in problems}
    counts = collections.Counter()
    with open(validation_file, encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)  # input: the decoded prompt, "user\n<problem>\nassistant\n"
            problem = by_text[row["input"].split("user\n", 1)[1].split("\nassistant", 1)[0]]
            counts[code_task.classify(problem, row["output"])] += 1
    total = sum(counts.values())
    return {k: counts[k] / total for k in ("right", *code_task.DEFECTS, "other")}


def main(argv: list[str] | None = None) -> int:
    """Runs the example; metrics files go to <workdir>/logs unless VERL_FILE_LOGGER_ROOT says otherwise."""
    saved, threads = os.environ.get("VERL_FILE_LOGGER_ROOT"), torch.get_num_threads()
    try:
        return _run(argv)
    finally:  # callers (tests) keep their environment and thread count
        torch.set_num_threads(threads)
        if saved is None:
            os.environ.pop("VERL_FILE_LOGGER_ROOT", None)
        else:
            os.environ["VERL_FILE_LOGGER_ROOT"] = saved


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Program-synthesis GRPO with test-case rewards through verl's local sandbox (CPU).")
    parser.add_argument("--workdir", default=os.path.join("build", "code_example"),
                        help="where data, checkpoints, logs and summary.json go (emptied first)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: all cores)")
    parser.add_argument("--hidden", type=int, default=64, help="the model's hidden size")
    parser.add_argument("--layers", type=int, default=2, help="the model's decoder layers")
    parser.add_argument("--n-train", type=int, default=1616, help="training problems (at most 1616)")
    parser.add_argument("--n-test", type=int, default=50, help="held-out problems (at most 400)")
    parser.add_argument("--defect-rate", type=float, default=0.5,
                        help="share of the teacher's demonstrations that carry a bug")
    parser.add_argument("--sft-copies", type=int, default=2, help="teacher demonstrations per training problem")
    parser.add_argument("--sft-steps", type=int, default=600)
    parser.add_argument("--sft-lr", type=float, default=5e-3)
    parser.add_argument("--rl-steps", type=int, default=20)
    parser.add_argument("--rl-lr", type=float, default=6e-4)
    parser.add_argument("--prompts-per-step", type=int, default=8)
    parser.add_argument("--samples-per-prompt", type=int, default=8)
    parser.add_argument("--test-freq", type=int, default=5)
    parser.add_argument("--val-samples", type=int, default=4,
                        help="programs sampled per held-out problem (temperature 1) by validation")
    args = parser.parse_args(argv)
    for name in ("hidden", "layers", "n_train", "n_test", "sft_copies", "sft_steps", "rl_steps", "prompts_per_step",
                 "samples_per_prompt", "test_freq", "val_samples"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.hidden % 4:
        parser.error(f"--hidden must be a multiple of the 4 attention heads, got {args.hidden}")
    if not 0.0 <= args.defect_rate <= 1.0:
        parser.error(f"--defect-rate must be in [0, 1], got {args.defect_rate}")
    return args


def _run(argv: list[str] | None) -> int:
    args = parse_args(argv)
    if args.threads > 0:
        torch.set_num_threads(args.threads)

    import verl
    from code_reward import SandboxReward

    start = time.perf_counter()
    work = os.path.abspath(args.workdir)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    os.environ.setdefault("VERL_FILE_LOGGER_ROOT", os.path.join(work, "logs"))

    print(f"== 1/4 task: {args.n_train} training and {args.n_test} held-out problems -> {work}/data")
    data = code_task.write_dataset(os.path.join(work, "data"), n_train=args.n_train, n_test=args.n_test,
                                   seed=args.seed, defect_rate=args.defect_rate, sft_copies=args.sft_copies)
    reward = SandboxReward()  # fails here, naming the cause, where the sandbox cannot isolate programs

    tokenizer = verl.load_tokenizer(TOKENIZER_DIR)
    init_dir = os.path.join(work, "init")
    n_params = write_initial_model(init_dir, tokenizer, args)
    print(f"== 2/4 SFT warm start: Qwen2 {args.layers}x{args.hidden} ({n_params / 1e3:.0f} k parameters), "
          f"{args.sft_steps} steps of 64 demonstrations; {args.defect_rate:.0%} of the teacher's programs have a bug")
    sft_model = sft(args, data, init_dir, os.path.join(work, "sft"))
    sft_done = time.perf_counter()

    print(f"== 3/4 GRPO: {args.rl_steps} steps of {args.prompts_per_step} prompts x {args.samples_per_prompt} "
          "programs, reward = fraction of test cases passed in the local sandbox")
    trainer = grpo(args, data, sft_model, os.path.join(work, "grpo"), reward)
    grpo_done = time.perf_counter()
    train_stats = reward.stats()

    from verl.utils.tracking import read_metrics

    metrics_path = trainer.tracker.metrics_path
    core = f"val-core/{code_task.DATA_SOURCE}/acc"
    keys = {"pass_rate": f"{core}/mean@{args.val_samples}",
            f"pass_at_{args.val_samples}": f"{core}/best@{args.val_samples}/mean",
            "tests_passed": f"val-aux/{code_task.DATA_SOURCE}/score/mean@{args.val_samples}"}
    curve = [{"step": step, **{name: m[key] for name, key in keys.items() if key in m}}
             for step, m in read_metrics(metrics_path) if keys["pass_rate"] in m]
    first, last = curve[0], curve[-1]
    verl.models.save_pretrained(trainer.model, os.path.join(work, "grpo_model"), tokenizer_dir=TOKENIZER_DIR)

    print("== 4/4 report")
    from verl.rollout import LLM
    from verl.utils.dataset.rl_dataset import read_rows

    test = [row for row, _ in read_rows(data["test"])]  # the held-out rows validation scored, as written
    _, test_problems = code_task.generate_splits(args.n_train, args.n_test, args.seed)
    tests = [row["reward_model"]["ground_truth"] for row in test]
    prompts = [tokenizer.apply_chat_template(row["prompt"], add_generation_prompt=True) for row in test]
    validation_dir = os.path.join(work, "grpo", "validation")
    kinds = {"sft": kinds_of(os.path.join(validation_dir, f"{first['step']}.jsonl"), test_problems),
             "grpo": kinds_of(os.path.join(validation_dir, f"{last['step']}.jsonl"), test_problems)}
    greedy = {}
    for name, model in (("sft", sft_model), ("grpo", trainer.model)):  # GRPO's: the trained weights, in memory
        llm = LLM(model, tokenizer, eos_token_id=tokenizer.eos_token_id)
        scores = reward([code_task.DATA_SOURCE] * len(test), greedy_programs(llm, prompts), tests, [None] * len(test))
        greedy[name] = sum(r["acc"] for r in scores) / len(scores)
    total = time.perf_counter() - start
    stats = reward.stats()

    def row(label: str, before: float, after: float, delta: bool = True) -> None:
        change = f"   ({(after - before) * 100:+.1f} points)" if delta else ""
        print(f"     {label:<46}{before:9.1%}   {after:10.1%}{change}")

    n = args.val_samples
    print(f"   {len(test)} held-out problems; a program passes when all 5 tests do  after SFT   after GRPO")
    row(f"pass rate, sampled (T=1, {n} per problem)", first["pass_rate"], last["pass_rate"])
    row(f"pass@{n} (some of the {n} passes)", first[f"pass_at_{n}"], last[f"pass_at_{n}"])
    row("tests passed, sampled (the reward)", first["tests_passed"], last["tests_passed"])
    row("pass rate, greedy", greedy["sft"], greedy["grpo"])
    for kind in ("right", *code_task.DEFECTS, "other"):
        row(f"  sampled programs: {kind}", kinds["sft"][kind], kinds["grpo"][kind], False)
    print(f"   sandbox: {stats['sandbox_runs']} test-case runs ({stats['programs_run']} distinct programs for "
          f"{stats['samples']} scored samples), {stats['sandbox_runs_per_s']:.1f} runs/s while scoring")
    print(f"   time: SFT {sft_done - start:.0f} s, GRPO {grpo_done - sft_done:.0f} s (scoring "
          f"{train_stats['scoring_seconds']:.0f} s of it), total {total:.0f} s")
    print(f"   metrics: {metrics_path}")
    if getattr(trainer, "plot_path", None):
        print(f"   plot:    {trainer.plot_path}")
    with open(os.path.join(work, "summary.json"), "w", encoding="utf-8") as f:
        json.dump({"validation": curve, "greedy_pass_rate": greedy, "sampled_kinds": kinds, "sandbox": stats,
                   "sandbox_during_grpo": train_stats,
                   "seconds": {"sft": round(sft_done - start, 1), "grpo": round(grpo_done - sft_done, 1),
                               "total": round(total, 1)},
                   "threads": torch.get_num_threads(), "args": vars(args)}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
