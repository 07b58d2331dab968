"""One-step off-policy GRPO (actor_rollout_ref.hybrid_engine=False) against verl's synchronous loop (issue 19 item 4).

The same GRPO job -- a random-init Qwen2 on the arith example's tokenizer and prompts, P prompts x n samples x R new
tokens per step, fp32 -- run by `verl.PPOTrainer.fit()` twice: with the hybrid engine (verl's RayPPOTrainer order:
generate, score, train, one after the other) and one-step off-policy (verl's OneStepOffRayTrainer order: batch N+1 is
generated and scored on a thread, from the weights after step N-1, while step N trains). The reward function waits
`--reward-ms` per sample before scoring (a sandbox run or a remote reward model; 0 = pure compute). Each side runs in
a fresh process, `--runs` times alternating; reported: steps/s (the whole fit(), startup excluded), the ratio, and
the one-step side's mean wait for its batch (timing_s/gen) against its generation + scoring time
(timing_s/generate_async + reward_async): the share of rollout time hidden behind training.

On a CPU the two threads share the cores, so the overlap gains where the rollout waits (the reward's latency, a tool,
a remote server) and little where both sides compute. `--pool` adds verl's layout as a third side: one trainer rank
and a rollout pool of one rank (rollout.n_gpus_per_node=1) under torchrun, each with half the threads -- the rollout
owns its cores, as it would own a GPU.

    python benchmarks/one_step/bench_one_step_off.py [--reward-ms 0 20] [--steps 6] [--runs 3] [--threads 2] [--pool]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
import results_json  # noqa: E402  (benchmarks/results_json.py)
from bench_env import load_average, summarize  # noqa: E402

MODEL = dict(hidden_size=256, intermediate_size=768, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2)


def write_job(work: str, args: argparse.Namespace) -> dict:
    """The model checkpoint and the prompt file, written once for both sides."""
    import torch

    from verl import _C, models
    from verl.models.transformer import CausalLM

    sys.path.insert(0, os.path.join(REPO, "examples", "arith"))
    import arith_task

    tokenizer_dir = os.path.join(REPO, "examples", "arith", "tokenizer")
    with open(os.path.join(tokenizer_dir, "tokenizer.json"), encoding="utf-8") as f:
        tok = json.load(f)
    vocab = len(tok["model"]["vocab"]) + len(tok.get("added_tokens", []))
    config = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "vocab_size": vocab,
              "max_position_embeddings": 512, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
              "tie_word_embeddings": False, **MODEL}
    module = _C.model.CausalLM(json.dumps(config))
    _C.model.init_weights(module, seed=0, initializer_range=0.02)
    model_dir = os.path.join(work, "model")
    models.save_pretrained(CausalLM._from_module(module), model_dir, tokenizer_dir=tokenizer_dir)
    train, _ = arith_task.generate_splits(args.prompts * (args.steps + 1), 0, seed=0)
    rows = [arith_task.rl_row(a, op, b, "train", i) for i, (a, op, b) in enumerate(train)]
    data = os.path.join(work, "train.jsonl")
    arith_task.write_jsonl(data, rows)
    del torch
    return {"model": model_dir, "data": data}


def overrides(job: dict, args: argparse.Namespace, side: str, out: str) -> list[str]:
    hybrid = side == "sync"
    return [
        f"actor_rollout_ref.model.path={job['model']}", f"data.train_files={job['data']}",
        "algorithm.adv_estimator=grpo", "data.shuffle=false", "data.max_prompt_length=32",
        f"data.max_response_length={args.response_length}", f"data.train_batch_size={args.prompts}",
        f"actor_rollout_ref.rollout.n={args.n}", "actor_rollout_ref.rollout.ignore_eos=true",
        f"actor_rollout_ref.actor.ppo_mini_batch_size={args.prompts}",
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=16",
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=32", "actor_rollout_ref.actor.optim.lr=1e-4",
        "actor_rollout_ref.actor.fsdp_config.dtype=float32", "actor_rollout_ref.ref.fsdp_config.dtype=float32",
        "actor_rollout_ref.model.enable_gradient_checkpointing=false", "actor_rollout_ref.actor.use_kl_loss=false",
        "trainer.logger=[]", "trainer.val_before_train=false", "trainer.test_freq=0", "trainer.save_freq=0",
        f"trainer.total_training_steps={args.steps}", "trainer.total_epochs=100", "trainer.device=cpu",
        f"trainer.default_local_dir={out}/ckpt", "trainer.project_name=bench", "trainer.experiment_name=one_step",
        f"actor_rollout_ref.hybrid_engine={hybrid}",
        # verl's one-step config: the rollout's log-probs are the old policy
        *([] if hybrid else ["actor_rollout_ref.rollout.free_cache_engine=false",
                             "algorithm.rollout_correction.bypass_mode=true"]),
        *(["+rollout.nnodes=1", "+rollout.n_gpus_per_node=1"] if side == "pool" else []),
    ]


def run_side(args: argparse.Namespace) -> None:
    """One side in this process: prints {"seconds", "steps", "timing": {key: per-step list}} as JSON."""
    import torch

    torch.set_num_threads(args.threads)
    from verl import PPOTrainer, RLConfig

    job = json.loads(args.job)
    reward_s = args.reward_ms / 1000.0

    def reward(response: str) -> float:
        time.sleep(reward_s)
        return float(len(set(response)) % 5) / 5.0

    with tempfile.TemporaryDirectory() as out:
        os.environ["VERL_FILE_LOGGER_ROOT"] = out
        trainer = PPOTrainer(config=RLConfig(overrides=overrides(job, args, args.side, out)), reward_fn=reward)
        start = time.perf_counter()
        trainer.fit()
        seconds = time.perf_counter() - start
        if os.environ.get("RANK", "0") != "0":
            return  # the pool's rank: the controller reports
        with open(os.path.join(out, "bench", "one_step.jsonl"), encoding="utf-8") as f:
            rows = [json.loads(line)["data"] for line in f]
    keys = ("timing_s/gen", "timing_s/generate_async", "timing_s/reward_async", "timing_s/reward",
            "timing_s/sync_rollout_weights", "timing_s/update_actor", "timing_s/step")
    print(json.dumps({"seconds": seconds, "steps": len(rows),
                      "timing": {k: [r.get(k, 0.0) for r in rows] for k in keys}}))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reward-ms", type=float, nargs="+", default=[0.0, 10.0])
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--prompts", type=int, default=16)
    p.add_argument("--n", "--samples", dest="n", type=int, default=4)  # --samples: torchrun takes --n for its own
    p.add_argument("--response-length", type=int, default=64)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--pool", action="store_true", help="also one trainer rank + a rollout pool of one (torchrun)")
    p.add_argument("--results-json")
    p.add_argument("--side", choices=["sync", "one_step", "pool"], help=argparse.SUPPRESS)
    p.add_argument("--job", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.side:
        args.reward_ms = args.reward_ms[0]
        run_side(args)
        return

    lines = [f"GRPO {args.prompts} prompts x n={args.n} x {args.response_length} new tokens, {args.steps} steps, "
             f"Qwen2 {MODEL['num_hidden_layers']} layers x {MODEL['hidden_size']} hidden, fp32, {args.threads} threads, "
             f"load {load_average()}; median of {args.runs} fresh processes per side (min-max)"]
    targets, data = [], {}
    with tempfile.TemporaryDirectory() as work:
        job = write_job(work, args)
        for reward_ms in args.reward_ms:
            sides = ("sync", "one_step", "pool") if args.pool else ("sync", "one_step")
            times = {side: [] for side in sides}
            hidden = []
            for _ in range(args.runs):
                for side in sides:
                    launch = [sys.executable]
                    if side == "pool":  # two ranks, each with half the threads
                        launch += ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
                    threads = max(1, args.threads // 2) if side == "pool" else args.threads
                    cmd = [*launch, __file__, "--side", side, "--job", json.dumps(job),
                           "--reward-ms", str(reward_ms), "--steps", str(args.steps), "--prompts", str(args.prompts),
                           "--samples", str(args.n), "--response-length", str(args.response_length),
                           "--threads", str(threads)]
                    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
                    result = json.loads(out.strip().splitlines()[-1])
                    times[side].append(result["steps"] / result["seconds"])
                    if side == "one_step":
                        t = result["timing"]
                        # steps 2..N: the rollout's work that ran beside the previous step, and the part waited for
                        work_s = sum(t["timing_s/generate_async"][1:]) + sum(t["timing_s/reward_async"][1:])
                        waited = sum(t["timing_s/gen"][1:])
                        hidden.append(max(0.0, 1.0 - waited / work_s) if work_s > 0 else 0.0)
            s, o = summarize(times["sync"]), summarize(times["one_step"])
            ratio = o["median"] / s["median"]
            h = summarize(hidden)
            lines.append(f"reward {reward_ms:g} ms/sample: synchronous {s['median']:.3f} steps/s "
                         f"({s['min']:.3f}-{s['max']:.3f}), one-step off-policy {o['median']:.3f} steps/s "
                         f"({o['min']:.3f}-{o['max']:.3f}): {ratio:.2f}x; rollout time hidden behind training "
                         f"{100 * h['median']:.0f}% ({100 * h['min']:.0f}-{100 * h['max']:.0f}%)")
            data[f"reward_{reward_ms:g}ms"] = {"sync_steps_per_s": times["sync"], "one_step_steps_per_s":
                                               times["one_step"], "hidden_fraction": hidden}
            if args.pool:
                pool = summarize(times["pool"])
                lines.append(f"  rollout pool (1 trainer rank + 1 rollout rank, {max(1, args.threads // 2)} thread(s) "
                             f"each): {pool['median']:.3f} steps/s ({pool['min']:.3f}-{pool['max']:.3f}): "
                             f"{pool['median'] / s['median']:.2f}x synchronous")
                data[f"reward_{reward_ms:g}ms"]["pool_steps_per_s"] = times["pool"]
                targets.append(results_json.target(f"one-step over a rollout pool vs synchronous, reward "
                                                   f"{reward_ms:g} ms/sample", pool["median"] / s["median"], "> 1x",
                                                   None, detail="steps/s ratio (not judged on 2 cores)"))
            targets.append(results_json.target(f"one-step off-policy vs synchronous, reward {reward_ms:g} ms/sample",
                                               ratio, "> 1x", None, detail="steps/s ratio (not judged on 2 cores)"))
    report = "\n".join(lines)
    print(report)
    if args.results_json:
        results_json.write(args.results_json, title="one-step off-policy GRPO vs the synchronous loop",
                           report=report, targets=targets, data=data)


if __name__ == "__main__":
    main()
