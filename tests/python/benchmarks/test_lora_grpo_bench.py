"""The LoRA GRPO benchmark's own logic (benchmarks/lora/bench_lora_grpo.py): its --quick run of the verl-cpp
configurations on the real SmolLM2-135M-Instruct (LoRA r = 32 all-linear and full fine-tuning: full-length responses
with EOS ignored, the adapters' parameter count and AdamW bytes), the spec keys it adds to the GRPO-step benchmark's
sides (absent for that benchmark's specs), and the report's ratios and targets. No TRL needed, no timed assertions."""

from __future__ import annotations

import argparse
import json
import os
import sys

import pytest

BENCH_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "..", "benchmarks")
sys.path.insert(0, os.path.join(BENCH_DIR, "lora"))
sys.path.insert(0, os.path.join(BENCH_DIR, "grpo_step"))
import bench_lora_grpo  # noqa: E402
import grpo_sides  # noqa: E402

# SmolLM2-135M: 30 layers x r = 32 x (in + out) of q (576->576), k, v (576->192), o (576->576), gate, up (576->1536),
# down (1536->576)
LORA_PARAMS = 30 * 32 * (2 * (576 + 576) + 2 * (576 + 192) + 3 * (576 + 1536))
# attention (q, o 576x576; k, v 576x192), MLP (3 x 576x1536) and two norms per layer; the final norm; the embedding,
# tied to the LM head (counted once)
FULL_PARAMS = 30 * (2 * 576 * 576 + 2 * 576 * 192 + 3 * 576 * 1536 + 2 * 576) + 576 + 49152 * 576


def test_the_spec_keys_for_lora_and_real_models_leave_the_grpo_step_specs_alone():
    assert grpo_sides._verl_extra_overrides({"model": "tiny"}) == []
    assert grpo_sides._vocab_size({"model": "tiny"}) == grpo_sides.common.MODELS["tiny"]["vocab_size"]
    spec = {"model": "x", "vocab_size": 49152, "lora_rank": 32, "lora_alpha": 64, "target_modules": "all-linear",
            "ignore_eos": True, "verl_overrides": ["trainer.seed=1"]}
    assert grpo_sides._vocab_size(spec) == 49152
    assert grpo_sides._verl_extra_overrides(spec) == [
        "actor_rollout_ref.model.lora_rank=32", "actor_rollout_ref.model.lora_alpha=64",
        "actor_rollout_ref.model.target_modules=all-linear", "actor_rollout_ref.rollout.ignore_eos=true",
        "trainer.seed=1"]


def test_the_configurations_differ_only_in_lora_dtype_and_lr():
    args = argparse.Namespace(
        prompts=2, n=8, max_tokens=128, micro_batch=16, warmup=1, steps=3, rounds=1, lr=1e-6, lora_lr=1e-5, seed=0, threads=2,
        rank=32, alpha=64)
    specs = {c: bench_lora_grpo.make_spec(args, c, "/ckpt", ["a", "b"]) for c in bench_lora_grpo.CONFIGS}
    common = {"checkpoint", "prompts", "prompts_per_step", "n", "max_tokens", "micro_batch", "warmup", "steps",
              "seed", "threads", "ignore_eos", "vocab_size"}
    for key in common:
        assert len({json.dumps(s[key]) for s in specs.values()}) == 1, key
    assert specs["verl-lora"]["ignore_eos"] is True
    for c in ("verl-lora", "trl-lora", "verl-lora-auto"):
        assert (specs[c]["lora_rank"], specs[c]["lora_alpha"], specs[c]["target_modules"], specs[c]["lr"]) == \
            (32, 64, "all-linear", 1e-5)
    for c in ("verl-full", "trl-full"):
        assert "lora_rank" not in specs[c] and specs[c]["lr"] == 1e-6
    assert specs["verl-lora"]["compute_dtypes"] == ["float32"] and specs["verl-lora-auto"]["compute_dtypes"] == ["auto"]
    assert "compute_dtypes" not in specs["trl-lora"]  # TRL on the CPU: fp32 weights, no autocast


def test_quick_run_of_the_verl_cpp_configurations(smollm2_dir, tmp_path):
    out = tmp_path / "r.json"
    md = tmp_path / "r.md"
    assert bench_lora_grpo.main(["--quick", "--no-trl", "--configs", "verl-lora", "verl-full", "trl-lora",
                                 "--checkpoint", smollm2_dir, "--workdir", str(tmp_path / "w"),
                                 "--results-json", str(out), "--results-md", str(md)]) == 0
    payload = json.loads(out.read_text())
    data = payload["data"]
    assert list(data["configs"]) == ["verl-lora", "verl-full"]  # --no-trl dropped trl-lora
    lora, full = data["configs"]["verl-lora"], data["configs"]["verl-full"]
    for row in (lora, full):
        assert row["full_length"], row["generated_tokens"]  # EOS ignored: 2 x 2 x 8 tokens
        assert row["generated_tokens"]["median"] == 2 * 2 * 8
        assert row["step"]["n"] == 1 and row["peak_rss_mb"] > 0
    assert lora["trainable_params"] == LORA_PARAMS == 9_768_960
    assert full["trainable_params"] == FULL_PARAMS == 134_515_008
    # AdamW's two fp32 moments for what trains: the adapters alone with LoRA
    assert lora["optimizer_state_bytes"] == 8 * LORA_PARAMS and full["optimizer_state_bytes"] == 8 * FULL_PARAMS
    assert set(data["ratios"]) == {"verl_full_over_verl_lora", "rss_verl_full_over_verl_lora"}
    assert [t["wanted"] for t in payload["targets"]] == ["reported"]
    assert "| verl-cpp LoRA r=32 (fp32) |" in payload["report"] and "verl-cpp full FT / verl-cpp LoRA" in payload["report"]
    assert md.read_text() == payload["report"] + "\n"
    # the report renders again from the JSON
    again = tmp_path / "again.md"
    assert bench_lora_grpo.main(["--from-json", str(out), "--results-md", str(again)]) == 0
    assert again.read_text() == md.read_text()


def _row(step, gen, rss, params=9_768_960):
    s = lambda v: {"median": v, "min": v, "max": v, "n": 3}  # noqa: E731
    return {"step": s(step), "generation": s(gen), "update": s(step - gen), "other": s(0.0), "log_prob": s(0.0),
            "tokens_per_s": s(2048 / step), "peak_rss_mb": rss, "trainable_params": params,
            "optimizer_state_bytes": 8 * params, "full_length": True, "load": ["0.1", "0.2"],
            "others_cpu": s(0.05)}


@pytest.mark.parametrize("trl_step, trl_rss, step_met, rss_met", [(50.0, 6000.0, True, True),
                                                                   (30.0, 4000.0, False, False)])
def test_ratios_targets_and_report(trl_step, trl_rss, step_met, rss_met):
    rows = {"verl-lora": _row(20.0, 8.0, 5000.0), "trl-lora": _row(trl_step, 20.0, trl_rss),
            "verl-full": _row(24.0, 8.0, 6500.0, 134_515_008)}
    r = bench_lora_grpo.ratios(rows)
    assert r["trl_lora_over_verl_lora"]["step"] == pytest.approx(trl_step / 20.0)
    assert r["trl_lora_over_verl_lora"]["generation"] == pytest.approx(20.0 / 8.0)
    assert r["rss_verl_lora_over_trl_lora"] == pytest.approx(5000.0 / trl_rss)
    assert (r["step_met"], r["rss_met"]) == (step_met, rss_met)
    assert r["verl_full_over_verl_lora"]["step"] == pytest.approx(1.2)
    assert r["trl_lora_over_verl_lora_by_round"] == []  # one round: nothing per round
    rounds = lambda *ts: [[{"step_s": 99.0, "measured": False}] + [{"step_s": t, "measured": True} for t in ts]]  # noqa: E731
    two = dict(rows, **{"verl-lora": dict(rows["verl-lora"], rounds=rounds(10.0, 12.0) + rounds(20.0)),
                        "trl-lora": dict(rows["trl-lora"], rounds=rounds(33.0) + rounds(30.0, 50.0))})
    assert bench_lora_grpo.ratios(two)["trl_lora_over_verl_lora_by_round"] == pytest.approx([3.0, 2.0])
    results = {"environment": {"date": "d", "cpu": "c", "cores": 2, "threads": 2, "load_start": "1", "load_end": "2",
                               "torch_version": "t"},
               "peaks": {"float32": 1e11, "bfloat16": 1e12}, "seconds": 1.0, "command": "python x",
               "workload": dict(prompts_per_step=2, n=8, max_tokens=128, warmup=1, steps=3, micro_batch=16, rank=32,
                                alpha=64, lr=1e-6, lora_lr=1e-5, threads=2, prompt_tokens_min=35,
                                prompt_tokens_max=40),
               "configs": rows, "ratios": r}
    targets = bench_lora_grpo.targets(results)
    assert [(t["wanted"], t["met"]) for t in targets] == [(">= 2x", step_met), ("<= 1x", rss_met), ("reported", None)]
    text = bench_lora_grpo.report(results)
    assert f"**{trl_step / 20.0:.2f}x**" in text
    assert text.count("NOT MET") == (not step_met) + (not rss_met)
    assert "Every configuration generated exactly" in text


def test_others_cpu_share_is_the_rest_of_the_machine():
    hz = os.sysconf("SC_CLK_TCK")
    # 2 s on 2 cores: the machine was busy 3 core-seconds, the measured process 2 of them -> others 1 of 4
    assert bench_lora_grpo.others_cpu_share((10.0, 0, 0), (12.0, 3 * hz, 2 * hz), cores=2) == pytest.approx(0.25)
    assert bench_lora_grpo.others_cpu_share((10.0, 0, 0), (12.0, 2 * hz, 2 * hz), cores=2) == 0.0
    assert bench_lora_grpo.others_cpu_share((10.0, 5, 0), (10.0, 9, 0), cores=2) == 0.0  # no time elapsed
    busy, mine = bench_lora_grpo._busy_ticks(os.getpid())
    assert busy > 0 and 0 < mine <= busy
    assert bench_lora_grpo._busy_ticks(2 ** 22 + 12345)[1] == 0  # a process that is gone


def test_rounds_pool_their_measured_steps_and_keep_the_highest_rss():
    spec = {"prompts_per_step": 1, "n": 2, "max_tokens": 3, "warmup": 1}
    step = lambda t, others: {"step_s": t, "generation_s": t / 2, "log_prob_s": 0.0, "update_s": t / 2,  # noqa: E731
                              "seqlens": [5 + 3, 5 + 3], "reward_mean": 0.5, "others_cpu": others}
    result = lambda rss, *steps: {"side": "verl", "prompt_tokens": [5, 5], "peak_rss_mb": rss, "wall_s": 1.0,  # noqa: E731
                                  "load_before": "a", "load_after": "b", "steps": list(steps),
                                  "trainable_params": 7, "optimizer_state_bytes": 56}
    row = bench_lora_grpo.summarize_config([result(100.0, step(99.0, 0.9), step(2.0, 0.1)),
                                            result(120.0, step(98.0, 0.9), step(4.0, 0.3))], spec, [5, 5])
    assert row["step"] == {"median": 3.0, "min": 2.0, "max": 4.0, "n": 2}  # each round's warm-up left out
    assert row["others_cpu"]["median"] == pytest.approx(0.2)
    assert row["peak_rss_mb"] == 120.0 and row["full_length"] and row["generated_tokens"]["median"] == 6
