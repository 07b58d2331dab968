"""One side of bench_dpo.py in its own process: ``python dpo_sides.py verl|trl SPEC.json OUT.json``.

``verl``: verl-cpp's ``verl.DPOTrainer`` (verl-cpp's venv), one ``train_step`` per batch of pairs (the C++ step).
``trl``: ``trl.DPOTrainer`` (the TRL venv; this side never imports verl-cpp's ``verl``), ``train()`` over the text rows.
Both read the checkpoint the parent wrote, train on the same pairs in the same order (pairs[k * B:(k + 1) * B] at
step k, micro-batches of M consecutive pairs), with the same hyperparameters, and write per-step records:

    step_s     wall time of the optimizer step. verl-cpp: around DPOTrainer.train_step on an already collated batch
               (the reference's forward, the policy's forward + backward over the micro-batches, clip, AdamW).
               TRL: the Trainer's on_step_begin -> on_step_end callbacks, which enclose the same work (the micro-batches'
               reference forward, policy forward + backward, clip, AdamW, scheduler, zero_grad); the batch's
               collation happens before on_step_begin (Trainer.get_batch_samples), as on the verl-cpp side.
    loss       the batch's mean DPO loss before the step's update (TRL: the mean of its micro-batches' unrounded
               losses, each the mean over its pairs -- equal micro-batches, so the batch mean)
    grad_norm, rewards/chosen, rewards/rejected, rewards/margins, rewards/accuracies, logps/chosen, logps/rejected
    tokens     non-padding tokens of the step (both sequences of every pair)

The TRL side checks that the token ids it trains on are exactly the parent's ``expected`` ids (dpo_common.
expected_pair_ids), pair by pair; the verl-cpp side trains on those ids.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time

METRICS = ("rewards/chosen", "rewards/rejected", "rewards/margins", "rewards/accuracies", "logps/chosen",
           "logps/rejected")


def _sequences(pair: dict) -> dict[str, list[int]]:
    return {side: pair["prompt_ids"] + pair[f"{side}_ids"] for side in ("chosen", "rejected")}


# ---- verl-cpp ----------------------------------------------------------------------------------------------------

def run_verl(spec: dict) -> dict:
    import torch

    from verl import DPOTrainer
    from verl.utils.dataset import collate_preference

    torch.set_num_threads(spec["threads"])
    B, M, total = spec["pairs_per_step"], spec["micro_pairs"], spec["warmup"] + spec["steps"]
    config = {
        "model.path": spec["checkpoint"], "model.dtype": "fp32", "model.use_remove_padding": True,
        "model.enable_gradient_checkpointing": False,
        "data.train_batch_size": B, "data.micro_batch_size_per_gpu": M, "data.use_dynamic_bsz": False,
        "data.max_length": 4096,
        "optim.lr": spec["lr"], "optim.weight_decay": 0.0, "optim.clip_grad": 1.0, "optim.betas": [0.9, 0.999],
        "optim.lr_scheduler_type": "constant", "optim.lr_warmup_steps_ratio": 0.0,
        "trainer.total_training_steps": total, "trainer.device": "cpu", "trainer.logger": [],
        "trainer.seed": spec["seed"],
        "dpo": {"beta": spec["beta"], "loss_type": "sigmoid", "label_smoothing": 0.0},
    }
    trainer = DPOTrainer(config=config)
    pairs = []
    for pair in spec["expected"]:
        seqs, prompt_len = _sequences(pair), len(pair["prompt_ids"])
        item = {}
        for side, ids in seqs.items():
            item[f"{side}_input_ids"] = torch.tensor(ids, dtype=torch.long)
            item[f"{side}_loss_mask"] = torch.tensor([0] * prompt_len + [1] * (len(ids) - prompt_len), dtype=torch.long)
        pairs.append(item)
    pad = spec["pad_id"]

    steps = []
    for k in range(total):
        batch = collate_preference(pairs[k * B:(k + 1) * B], pad)
        t0 = time.perf_counter()
        metrics = trainer.train_step(batch)
        step_s = time.perf_counter() - t0
        record = {"step_s": step_s, "loss": metrics["loss"], "grad_norm": metrics["grad_norm"],
                  "tokens": int(batch["attention_mask"].sum()), "padded_tokens": int(batch["input_ids"].numel())}
        record.update({m: metrics[m] for m in METRICS})
        steps.append(record)
        print(f"[verl-cpp] step {k + 1}/{total}: {step_s:.3f} s, loss {record['loss']:.6f}", file=sys.stderr,
              flush=True)
    return {"side": "verl", "steps": steps}


# ---- TRL ---------------------------------------------------------------------------------------------------------

def run_trl(spec: dict) -> dict:
    import torch
    import transformers
    from datasets import Dataset
    from trl import DPOConfig, DPOTrainer

    assert "verl" not in sys.modules, "the TRL side must not import verl-cpp"
    torch.set_num_threads(spec["threads"])
    B, M, total = spec["pairs_per_step"], spec["micro_pairs"], spec["warmup"] + spec["steps"]
    tokenizer = transformers.AutoTokenizer.from_pretrained(spec["checkpoint"])

    def load():
        return transformers.AutoModelForCausalLM.from_pretrained(spec["checkpoint"], dtype=torch.float32,
                                                                 attn_implementation="sdpa")

    rows = spec["rows"][:total * B]
    args = DPOConfig(
        output_dir=tempfile.mkdtemp(prefix="dpo-bench-trl-"), use_cpu=True, bf16=False, fp16=False,
        seed=spec["seed"], data_seed=spec["seed"], train_sampling_strategy="sequential",
        per_device_train_batch_size=M, gradient_accumulation_steps=B // M, max_steps=total,
        learning_rate=spec["lr"], lr_scheduler_type="constant", warmup_steps=0, weight_decay=0.0,
        adam_beta1=0.9, adam_beta2=0.999, max_grad_norm=1.0, beta=spec["beta"], loss_type=["sigmoid"],
        label_smoothing=0.0, max_length=None, gradient_checkpointing=False, precompute_ref_log_probs=False,
        logging_steps=1, report_to="none", save_strategy="no", disable_tqdm=True, dataloader_num_workers=0)
    trainer = DPOTrainer(model=load(), ref_model=load(), args=args, train_dataset=Dataset.from_list(rows),
                         processing_class=tokenizer)

    # every sequence TRL trains on, checked against the parent's expected ids, in order
    expected = []
    for pair in spec["expected"][:total * B]:
        seqs = _sequences(pair)
        expected.append((seqs["chosen"], seqs["rejected"], len(pair["prompt_ids"])))
    seen = [0]
    micro_losses: list[float] = []
    tokens = [0, 0]

    compute_loss = trainer.compute_loss

    def checked_compute_loss(model, inputs, *a, **kw):
        ids, attn, comp = inputs["input_ids"], inputs["attention_mask"], inputs["completion_mask"]
        half = ids.shape[0] // 2  # TRL's layout: the micro-batch's chosen rows, then its rejected rows
        for i in range(half):
            chosen, rejected, prompt_len = expected[seen[0]]
            for row, want in ((i, chosen), (half + i, rejected)):
                n = int(attn[row].sum())
                got = ids[row, :n].tolist()
                if got != want or comp[row, :prompt_len].any() or not comp[row, prompt_len:n].all():
                    raise AssertionError(f"TRL trains pair {seen[0]} on other tokens than the parent's expected ids")
            seen[0] += 1
        tokens[0] += int(attn.sum())
        tokens[1] += int(ids.numel())
        loss = compute_loss(model, inputs, *a, **kw)
        micro_losses.append(float((loss[0] if isinstance(loss, tuple) else loss).detach()))
        return loss

    trainer.compute_loss = checked_compute_loss
    steps: list[dict] = []

    class StepTimer(transformers.TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            micro_losses.clear()
            tokens[0] = tokens[1] = 0
            self.t0 = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            step_s = time.perf_counter() - self.t0
            steps.append({"step_s": step_s, "loss": sum(micro_losses) / len(micro_losses), "tokens": tokens[0],
                          "padded_tokens": tokens[1]})
            print(f"[TRL] step {len(steps)}/{total}: {step_s:.3f} s, loss {steps[-1]['loss']:.6f}", file=sys.stderr,
                  flush=True)

        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "grad_norm" in logs and steps:
                steps[-1]["grad_norm"] = float(logs["grad_norm"])
                steps[-1].update({m: float(logs[m]) for m in METRICS if m in logs})

    trainer.add_callback(StepTimer())
    trainer.train()
    assert len(steps) == total and seen[0] == total * B, f"TRL ran {len(steps)} steps over {seen[0]} pairs"
    return {"side": "trl", "steps": steps}


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
