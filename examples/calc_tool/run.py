"""A tiny model learns on the CPU to call a calculator tool: SFT warm start, then GRPO through verl's agent loop.

1. task   -- 4,000 training and 400 held-out problems "Compute 37*48." with operands 10..99 (calc_task.py, verl's
             RL schema with ``agent_name: tool_agent``; the splits share no problem).
2. model  -- a randomly initialised Qwen2-architecture decoder (2 layers, hidden 64) with the task's byte-level BPE
             tokenizer, whose chat template renders tools, tool calls and tool responses in Qwen's hermes layout
             (build_tokenizer.py), written as a Hugging Face checkpoint.
3. SFT    -- verl.SFTTrainer on an imperfect teacher's conversations: a minority call ``calculator`` and copy its
             result, the rest answer the product directly. The student learns both forms, but cannot multiply:
             its direct answers are wrong, and greedy decoding prefers the majority's direct answer.
4. GRPO   -- verl.PPOTrainer with ``actor_rollout_ref.rollout.multi_turn.enable=true``: every rollout runs in verl's
             ``tool_agent`` loop, the model's calls execute the calculator (calculator.py, a parser, never ``eval``)
             and its results enter the context as tool turns (response_mask 0). Reward 1 for exactly the product:
             the rollouts that called the tool earn it, so the tool-call rate and the accuracy rise together.
5. report -- greedy held-out accuracy and tool-call rate after SFT and after GRPO (each conversation run through the
             same agent loop), a few conversations side by side, timings, summary.json, the metrics JSONL and a PNG.

Everything is seeded: the same machine gives the same numbers. Run ``python examples/calc_tool/run.py --help``.
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

import calc_task  # noqa: E402
from calculator import TOOL_SCHEMA, calculator  # noqa: E402

TOKENIZER_DIR = os.path.join(HERE, "tokenizer")
PROMPT_LENGTH = 96  # the rendered prompt with the tools block is 91 tokens
RESPONSE_LENGTH = 64  # one call (22 tokens), its tool turn (17) and the answer (5) fit; a second call does not
MAX_ASSISTANT_TURNS = 2  # call, then answer: a rollout that calls again ends unanswered (reward 0)
SFT_MAX_LENGTH = 160
SAMPLED = 4  # the report's sampled numbers: conversations per held-out problem at temperature 1
VAL_ACC, VAL_TOOL = "val-core/calc_tool/acc/mean@1", "val-aux/calc_tool/tool_call/mean@1"
# The PNG's panels: (title, [(metric, label), ...]) against the GRPO step.
PANELS = (("training rollouts (sampled)", (("critic/score/mean", "reward"), ("tool_call_counts/mean", "tool calls"))),
          ("held-out problems (greedy)", ((VAL_ACC, "accuracy"), (VAL_TOOL, "tool-call rate"))))


def model_config(tokenizer) -> dict:
    return {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "vocab_size": len(tokenizer),
            "hidden_size": 64, "intermediate_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
            "num_key_value_heads": 2, "max_position_embeddings": PROMPT_LENGTH + RESPONSE_LENGTH,
            "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": True,
            "eos_token_id": tokenizer.eos_token_id, "pad_token_id": tokenizer.pad_token_id, "torch_dtype": "float32"}


def write_initial_model(path: str, tokenizer, seed: int) -> int:
    """A random model with transformers' initialisation, saved to ``path``; returns its parameter count."""
    import verl.models as models

    model = models.init_weights(models.CausalLM(model_config(tokenizer)), seed)
    models.save_pretrained(model, path, tokenizer_dir=TOKENIZER_DIR)
    return sum(p.numel() for p in model.parameters())


def sft(args, data: dict, init_dir: str, out_dir: str) -> str:
    from verl import SFTTrainer

    trainer = SFTTrainer(config={
        "model.path": init_dir, "data.train_files": data["sft"], "data.messages_key": "messages",
        # the tools block the agent loop renders into every RL prompt, so SFT trains on the prompts RL gives
        "data.apply_chat_template_kwargs": {"tools": [TOOL_SCHEMA]},
        "data.train_batch_size": args.sft_batch, "data.use_dynamic_bsz": False,
        "data.micro_batch_size_per_gpu": args.sft_batch, "data.max_length": SFT_MAX_LENGTH, "data.seed": args.seed,
        "model.enable_gradient_checkpointing": False, "optim.lr": 5e-3, "optim.lr_warmup_steps": 20,
        "optim.lr_scheduler_type": "cosine", "optim.weight_decay": 0.01, "trainer.total_epochs": 1000,
        "trainer.total_training_steps": args.sft_steps, "trainer.default_local_dir": out_dir,
        "trainer.resume_mode": "disable", "trainer.seed": args.seed, "trainer.logger": ["console"],
        "trainer.project_name": "calc-tool", "trainer.experiment_name": "sft", "trainer.device": "cpu"})
    trainer.fit()
    return trainer.hf_model_path


def grpo(args, data: dict, model_dir: str, out_dir: str):
    from verl import PPOTrainer, RLConfig

    rows = args.prompts_per_step * args.n
    config = RLConfig(
        algorithm="grpo", model=model_dir, train_files=data["train"], val_files=data["test"],
        batch_size=args.prompts_per_step, n=args.n, learning_rate=args.rl_lr, max_prompt_length=PROMPT_LENGTH,
        max_response_length=RESPONSE_LENGTH, seed=args.seed,
        overrides=[
            "actor_rollout_ref.rollout.multi_turn.enable=true",  # rows run in the loop their agent_name names
            f"actor_rollout_ref.rollout.multi_turn.max_assistant_turns={MAX_ASSISTANT_TURNS}",
            "actor_rollout_ref.rollout.multi_turn.max_tool_response_length=64",
            f"actor_rollout_ref.actor.ppo_mini_batch_size={args.prompts_per_step}",
            f"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu={rows}",
            f"actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu={rows}",
            "actor_rollout_ref.model.enable_gradient_checkpointing=false",
            "actor_rollout_ref.actor.use_kl_loss=false", "actor_rollout_ref.actor.entropy_coeff=0",
            "actor_rollout_ref.rollout.max_num_seqs=512", f"data.val_batch_size={args.n_test}",
            "trainer.total_epochs=1000", f"trainer.total_training_steps={args.rl_steps}",
            f"trainer.test_freq={args.test_freq}", "trainer.val_before_train=true", "trainer.save_freq=-1",
            "trainer.resume_mode=disable", f"trainer.default_local_dir={out_dir}",
            "trainer.logger=[console]", "trainer.project_name=calc-tool", "trainer.experiment_name=grpo",
            "trainer.device=cpu"])
    # The plain function is the tool: its signature and docstring give the schema (equal to TOOL_SCHEMA).
    trainer = PPOTrainer(config=config, reward_fn=calc_task.compute_score, tools=[calculator])
    trainer.fit()
    return trainer


def conversations(model, tokenizer, rows: list[dict], temperature: float = 0.0, samples: int = 1,
                  seed: int = 0) -> list[dict]:
    """``samples`` conversations per row through verl's ``tool_agent`` loop with the calculator (greedy when
    ``temperature`` is 0; sample j of row i seeded ``seed + j * len(rows) + i``): each one's decoded response (model
    and tool turns), score and whether it called the tool."""
    from verl.experimental.agent_loop import AgentLoopConfig, AgentLoopWorker
    from verl.rollout import LLM

    llm = LLM(model, tokenizer, eos_token_id=tokenizer.eos_token_id, max_num_seqs=512,
              max_model_len=PROMPT_LENGTH + RESPONSE_LENGTH)
    config = AgentLoopConfig(prompt_length=PROMPT_LENGTH, response_length=RESPONSE_LENGTH,
                             multi_turn={"enable": True, "max_assistant_turns": MAX_ASSISTANT_TURNS,
                                         "max_tool_response_length": 64})
    worker = AgentLoopWorker(llm, tokenizer, config, tools=[_tool()])
    repeated = [row for _ in range(samples) for row in rows]
    outs = worker.run([{"raw_prompt": row["prompt"], "agent_name": row["agent_name"]} for row in repeated],
                      {"temperature": temperature, "max_tokens": RESPONSE_LENGTH},
                      seeds=[seed + i for i in range(len(repeated))])
    results = []
    for row, out in zip(repeated, outs):
        text = tokenizer.decode(out.response_ids, skip_special_tokens=True)
        score = calc_task.compute_score(row["data_source"], text, row["reward_model"]["ground_truth"])
        results.append({"response": text, "acc": score["acc"], "tool_call": score["tool_call"]})
    return results


def _tool():
    from verl.tools.function_tool import FunctionTool

    return FunctionTool.from_function(calculator)


def summarize(results: list[dict]) -> dict[str, float]:
    n = len(results)
    used = [r for r in results if r["tool_call"]]
    direct = [r for r in results if not r["tool_call"]]
    return {"acc": sum(r["acc"] for r in results) / n, "tool_call_rate": len(used) / n,
            "acc_with_tool": sum(r["acc"] for r in used) / len(used) if used else None,
            "acc_without_tool": sum(r["acc"] for r in direct) / len(direct) if direct else None}


def plot(metrics_path: str, png: str) -> str | None:
    """The training rollouts' reward and tool calls, the held-out accuracy and tool-call rate, against the GRPO step;
    None without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    from verl.utils.tracking import read_metrics

    records = read_metrics(metrics_path)
    fig, axes = plt.subplots(1, len(PANELS), figsize=(5 * len(PANELS), 3.4))
    for ax, (title, curves) in zip(axes, PANELS):
        for key, label in curves:
            points = [(step, m[key]) for step, m in records if key in m]
            ax.plot([s for s, _ in points], [v for _, v in points], marker="o" if key.startswith("val") else None,
                    label=label)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("GRPO step")
        ax.set_ylim(-0.05, 1.05)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    plt.close(fig)
    return png


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
    parser = argparse.ArgumentParser(description="A tiny model learns to call a calculator tool: SFT warm start + "
                                                 "GRPO through verl's agent loop (CPU).")
    parser.add_argument("--workdir", default=os.path.join("build", "calc_tool"),
                        help="where data, checkpoints, logs and summary.json go (emptied first)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: all cores)")
    parser.add_argument("--n-train", type=int, default=4000, help="training problems")
    parser.add_argument("--n-test", type=int, default=400, help="held-out problems")
    parser.add_argument("--tool-rate", type=float, default=0.4,
                        help="share of the teacher's conversations that call the calculator")
    parser.add_argument("--sft-steps", type=int, default=1000)
    parser.add_argument("--sft-batch", type=int, default=32)
    parser.add_argument("--rl-steps", type=int, default=30)
    parser.add_argument("--rl-lr", type=float, default=5e-4)
    parser.add_argument("--prompts-per-step", type=int, default=16)
    parser.add_argument("--n", type=int, default=8, help="GRPO samples per prompt")
    parser.add_argument("--test-freq", type=int, default=5)
    args = parser.parse_args(argv)
    if not 0.0 <= args.tool_rate <= 1.0:
        parser.error(f"--tool-rate must be in [0, 1], got {args.tool_rate}")
    for name in ("n_train", "n_test", "sft_steps", "sft_batch", "rl_steps", "prompts_per_step", "test_freq"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.n < 2:
        parser.error(f"--n must be >= 2 (GRPO compares samples of one prompt), got {args.n}")
    return args


def _run(argv: list[str] | None) -> int:
    args = parse_args(argv)
    if args.threads > 0:
        torch.set_num_threads(args.threads)

    import verl

    start = time.perf_counter()
    work = os.path.abspath(args.workdir)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    os.environ.setdefault("VERL_FILE_LOGGER_ROOT", os.path.join(work, "logs"))

    print(f"== 1/4 task: a*b, operands {calc_task.MIN_OPERAND}..{calc_task.MAX_OPERAND} -> {work}/data")
    data = calc_task.write_dataset(os.path.join(work, "data"), args.n_train, args.n_test, args.seed, args.tool_rate)

    tokenizer = verl.load_tokenizer(TOKENIZER_DIR)
    init_dir = os.path.join(work, "init")
    n_params = write_initial_model(init_dir, tokenizer, args.seed)
    print(f"== 2/4 SFT warm start: Qwen2 2x64 ({n_params / 1e3:.0f} k parameters), {args.sft_steps} steps of "
          f"{args.sft_batch} conversations; {args.tool_rate:.0%} of the teacher's call the calculator")
    sft_model = sft(args, data, init_dir, os.path.join(work, "sft"))
    sft_done = time.perf_counter()

    print(f"== 3/4 GRPO: {args.rl_steps} steps of {args.prompts_per_step} prompts x {args.n} rollouts in the "
          "tool_agent loop, reward = exact product")
    trainer = grpo(args, data, sft_model, os.path.join(work, "grpo"))
    grpo_done = time.perf_counter()
    final_dir = os.path.join(work, "grpo_model")
    verl.models.save_pretrained(trainer.model, final_dir, tokenizer_dir=TOKENIZER_DIR)

    print("== 4/4 report")
    from verl.utils.dataset.rl_dataset import read_rows
    from verl.utils.tracking import read_metrics

    test = [row for row, _ in read_rows(data["test"])]
    before = conversations(sft_model, tokenizer, test)
    after = conversations(final_dir, tokenizer, test)
    sb, sa = summarize(before), summarize(after)
    sampled = {name: summarize(conversations(model, tokenizer, test, 1.0, SAMPLED, args.seed))
               for name, model in (("sft", sft_model), ("grpo", final_dir))}
    for i in [i for i, (b, a) in enumerate(zip(before, after)) if b["acc"] != a["acc"]][:2]:
        print(f"   {test[i]['prompt'][0]['content']}  (truth {test[i]['reward_model']['ground_truth']})")
        print(f"     after SFT : {before[i]['response']!r}")
        print(f"     after GRPO: {after[i]['response']!r}")
    print(f"   held-out ({len(test)} problems)                  after SFT   after GRPO")
    print(f"     greedy accuracy                      {sb['acc']:9.1%}   {sa['acc']:10.1%}")
    print(f"     greedy tool-call rate                {sb['tool_call_rate']:9.1%}   {sa['tool_call_rate']:10.1%}")
    print(f"     sampled accuracy (T=1, {SAMPLED} each)      {sampled['sft']['acc']:9.1%}   "
          f"{sampled['grpo']['acc']:10.1%}")
    print(f"     sampled tool-call rate               {sampled['sft']['tool_call_rate']:9.1%}   "
          f"{sampled['grpo']['tool_call_rate']:10.1%}")
    metrics_path = trainer.tracker.metrics_path
    records = read_metrics(metrics_path)
    train_curve = [(step, m.get("critic/score/mean"), m.get("tool_call_counts/mean")) for step, m in records
                   if "critic/score/mean" in m]
    val_curve = [(step, m[VAL_ACC], m.get(VAL_TOOL)) for step, m in records if VAL_ACC in m]
    first, last = train_curve[0], train_curve[-1]
    print(f"   training rollouts, step {first[0]} -> {last[0]}: reward {first[1]:.2f} -> {last[1]:.2f}, tool calls "
          f"per rollout {first[2]:.2f} -> {last[2]:.2f}")
    seconds = time.perf_counter() - start
    print(f"   time: SFT {sft_done - start:.0f} s, GRPO {grpo_done - sft_done:.0f} s, total {seconds:.0f} s "
          f"(torch threads: {torch.get_num_threads()})")
    png = plot(metrics_path, os.path.join(work, "calc_tool_curves.png"))
    print(f"   metrics: {metrics_path}")
    if png:
        print(f"   plot:    {png}")
    summary = {"greedy": {"sft": sb, "grpo": sa}, "sampled": sampled, "train_curve": train_curve,
               "val_curve": val_curve,
               "seconds": {"sft": sft_done - start, "grpo": grpo_done - sft_done, "total": seconds},
               "threads": torch.get_num_threads(), "args": vars(args),
               "examples": [{"prompt": test[i]["prompt"][0]["content"], "sft": before[i]["response"],
                             "grpo": after[i]["response"]} for i in range(3)]}
    with open(os.path.join(work, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
