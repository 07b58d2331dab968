"""The GRPO-step benchmark's own logic (benchmarks/grpo_step/): what could silently make its report wrong -- the
power-law fit, verl's FLOP formula and the MFU arithmetic, the phase split and medians, the tokenizer both sides
share, the toy reward, and the verl-cpp side's per-step records from a real (toy-size) run. No TRL needed, no
timed assertions."""

from __future__ import annotations

import math
import os
import sys

import pytest

BENCH_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "..", "benchmarks", "grpo_step")
sys.path.insert(0, BENCH_DIR)
import bench_grpo_step  # noqa: E402
import grpo_common as common  # noqa: E402


def test_power_law_fit_recovers_known_exponent_and_coefficient():
    xs = [128, 256, 512, 1024]
    fit = common.fit_power_law(xs, [3.0 * x ** 1.5 for x in xs])
    assert fit["exponent"] == pytest.approx(1.5, abs=1e-12)
    assert fit["coefficient"] == pytest.approx(3.0, rel=1e-10)
    assert fit["r2"] == pytest.approx(1.0, abs=1e-12)
    # linear cost plus a fixed overhead bends the log-log line: between 0 and 1, imperfect fit
    fit = common.fit_power_law(xs, [10.0 + 0.1 * x for x in xs])
    assert 0.0 < fit["exponent"] < 1.0 and fit["r2"] < 1.0
    # hand-computed least squares in log2 space: points (1, 1), (2, 2), (3, 2) -> slope 0.5
    fit = common.fit_power_law([2, 4, 8], [2, 4, 4])
    assert fit["exponent"] == pytest.approx(0.5, abs=1e-12)
    with pytest.raises(ValueError):
        common.fit_power_law([1, 2], [1.0, -1.0])
    with pytest.raises(ValueError):
        common.fit_power_law([4, 4], [1.0, 2.0])


def test_verl_flops_by_hand_for_the_tiny_model():
    # tiny: hidden 128, intermediate 384, 8 layers, 4 heads (head_dim 32), 2 kv heads (kv size 64), vocab 8192
    dense = 8 * (3 * 128 * 384 + 128 * (2 * 128 + 2 * 64)) + 2 * 8192 * 128
    assert dense == 3_670_016
    seqlens = [10, 20]
    expected = 6 * dense * 30 + 6 * (10 ** 2 + 20 ** 2) * 32 * 4 * 8
    assert common.verl_flops("tiny", seqlens) == expected
    assert common.verl_flops("tiny", seqlens, forward_only=True) == pytest.approx(expected / 3)
    # linear in the token count apart from the quadratic attention term
    assert common.verl_flops("tiny", [10] * 4) == 4 * common.verl_flops("tiny", [10])


def test_mfu_arithmetic():
    assert common.mfu(1e12, 2.0, 1e12) == pytest.approx(0.5)
    assert common.mfu(3e9, 0.5, 2e10) == pytest.approx(0.3)
    with pytest.raises(ValueError):
        common.mfu(1e9, 0.0, 1e12)
    with pytest.raises(ValueError):
        common.mfu(1e9, 1.0, 0.0)


def test_phase_split_and_summary():
    split = common.phase_split(10.0, generation_s=4.0, log_prob_s=1.5, update_s=4.0)
    assert split == {"generation": 4.0, "log_prob": 1.5, "update": 4.0, "other": pytest.approx(0.5), "step": 10.0}
    # rounding noise below 1 ms clamps to 0; timers that overlap are an error, not a negative "other"
    assert common.phase_split(1.0, 0.5, 0.0, 0.5005)["other"] == 0.0
    with pytest.raises(ValueError):
        common.phase_split(1.0, 0.6, 0.0, 0.6)
    with pytest.raises(ValueError):
        common.phase_split(1.0, -0.1, 0.0, 0.5)
    assert common.summarize([3.0, 1.0, 2.0, 10.0]) == {"median": 2.5, "min": 1.0, "max": 10.0, "n": 4}


def test_speed_summary_skips_warmup_and_computes_rates():
    spec = {"model": "tiny", "prompts_per_step": 2, "n": 2, "max_tokens": 5, "warmup": 1}
    seqlens = [15, 15, 13, 13]
    step = lambda total, gen, lp, upd: {"step_s": total, "generation_s": gen, "log_prob_s": lp, "update_s": upd,  # noqa: E731
                                        "seqlens": seqlens}
    result = {"steps": [step(100.0, 50.0, 0.0, 50.0), step(2.0, 1.0, 0.25, 0.5), step(4.0, 2.0, 0.5, 1.0),
                        step(3.0, 1.0, 0.5, 1.0)], "peak_rss_mb": 123.0}
    peaks = {"float32": 1e9, "bfloat16": 2e9}
    out = bench_grpo_step.speed_summary(result, spec, peaks)
    assert out["step"] == {"median": 3.0, "min": 2.0, "max": 4.0, "n": 3}  # the 100 s warm-up step is not in it
    assert out["generation"]["median"] == 1.0 and out["log_prob"]["median"] == 0.5
    assert out["other"]["median"] == pytest.approx(0.5)  # 2-1.75, 4-3.5, 3-2.5
    assert out["generated_tokens_per_step"] == 20
    assert out["tokens_per_s"]["median"] == pytest.approx(20 / 3.0)
    gen_flops = common.verl_flops("tiny", seqlens, forward_only=True)
    assert out["mfu_generation_float32"]["median"] == pytest.approx(gen_flops / 1.0 / 1e9)
    assert out["mfu_generation_bfloat16"]["median"] == pytest.approx(gen_flops / 1.0 / 2e9)
    assert out["mfu_update_float32"]["max"] == pytest.approx(common.verl_flops("tiny", seqlens) / 0.5 / 1e9)
    assert out["mean_seqlen"] == pytest.approx(14.0)


def test_toy_reward():
    vocab = 8192
    assert common.target_token_limit(vocab) == 1024
    assert common.toy_reward([0, 1023, 1024, 8191], vocab) == 0.5
    assert common.toy_reward([5] * 7, vocab) == 1.0
    assert common.toy_reward([], vocab) == 0.0


@pytest.mark.parametrize("vocab", [8192, 32000])
def test_shared_tokenizer_is_identical_in_hf_and_verl_and_eos_is_outside_the_model(tmp_path, vocab):
    tokenizers = pytest.importorskip("tokenizers")
    import verl

    common.write_tokenizer(str(tmp_path), vocab)
    ids = common.special_ids(vocab)
    assert ids == {"pad": vocab - 1, "eos": vocab}  # pad inside the embedding, EOS never sampled
    spec = common.tokenizer_json(vocab)
    assert len(spec["model"]["vocab"]) == vocab - 1 and len(spec["model"]["merges"]) == vocab - 257
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    ours = verl.load_tokenizer(str(tmp_path))
    assert ours.eos_token_id == vocab and ours.pad_token_id == vocab - 1
    texts = common.make_prompt_texts(8, 52, seed=0)
    assert texts == common.make_prompt_texts(8, 52, seed=0)  # deterministic
    hf_ids = [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)]
    assert ours.batch_encode(texts, add_special_tokens=False) == hf_ids
    assert all(max(row) < vocab - 1 for row in hf_ids)
    assert 39 * 2 <= min(len(t) for t in texts) and max(len(t) for t in texts) <= 65 * 2


def test_verl_side_records_one_consistent_step(tmp_path):
    """A real verl-cpp GRPO step through the benchmark's verl side: exactly max_tokens per sample (EOS is
    unreachable), the reward the trainer saw is the toy reward, and the phases fit inside the step."""
    import grpo_sides

    checkpoint = str(tmp_path / "tiny")
    common.write_checkpoint(checkpoint, "tiny", seed=0)
    texts = common.make_prompt_texts(2, 12, seed=0)
    spec = dict(model="tiny", checkpoint=checkpoint, prompts=texts, prompts_per_step=2, n=4, micro_batch=8,
                max_tokens=6, warmup=0, steps=1, lr=1e-3, seed=0, threads=1)
    result = grpo_sides.run_verl(spec)
    (step,) = result["steps"]
    assert sorted(step["seqlens"]) == sorted(p + 6 for p in result["prompt_tokens"] for _ in range(4))
    assert step["response_length_mean"] == 6.0
    assert 0.0 <= step["reward_mean"] <= 1.0 and step["reward_mean"] * 8 * 6 == pytest.approx(
        round(step["reward_mean"] * 8 * 6))  # a count of target tokens over 48 response tokens
    split = common.phase_split(step["step_s"], step["generation_s"], step["log_prob_s"], step["update_s"])
    assert split["generation"] > 0 and split["update"] > 0
    # one epoch of one mini-batch, cut as the log-prob pass cuts it: the update's forward gives the old log-probs (as
    # TRL's does on-policy), so there is no pass to time
    assert split["log_prob"] == 0 and "old_log_prob" not in step["timing"]
    assert step["timing"]["step"] <= step["step_s"] + 1e-6  # the C++ step is inside the Python wall time
    assert not math.isnan(step["trainer_mfu_actor"])


def test_no_worse_allows_two_standard_errors_of_the_difference():
    # sem 0.003 and 0.004 -> difference sem 0.005 -> tolerance 0.01
    out = common.no_worse(0.195, 0.003, 0.204, 0.004)
    assert out["tolerance"] == pytest.approx(0.01)
    assert out["met"] and not out["strictly_higher"] and out["difference"] == pytest.approx(-0.009)
    assert not common.no_worse(0.190, 0.003, 0.204, 0.004)["met"]
    assert common.no_worse(0.3, 0.0, 0.2, 0.0) == {"met": True, "tolerance": 0.0, "strictly_higher": True,
                                                   "difference": pytest.approx(0.1)}


def test_targets_for_the_rollup_and_report_from_json(tmp_path, capsys):
    import json

    summary = lambda v: {"median": v, "min": v, "max": v, "n": 3}  # noqa: E731
    side = lambda step, lp: {**{k: summary(v) for k, v in {"step": step, "generation": step / 2, "log_prob": lp,  # noqa: E731
                                                          "update": step / 2 - lp, "other": 0.0}.items()},
                             "tokens_per_s": summary(1000 / step), "peak_rss_mb": 1.0,
                             **{f"mfu_{p}_{d}": summary(0.1) for p in ("generation", "update")
                                for d in ("float32", "bfloat16")}}
    workload = {"prompts_per_step": 16, "n": 8, "max_tokens": 256, "warmup": 1, "steps": 3}
    results = {
        "environment": {"date": "d", "cpu": "c", "threads": 1, "loadavg": "0", "torch_version": "t"},
        "peaks": {"float32": 1e11, "bfloat16": 2e11}, "seconds": 1.0, "args": {},
        "speed": [{"model": "tiny", "workload": workload, "verl": side(10.0, 2.0), "trl": side(60.0, 0.0),
                   "speedup": 6.0, "phase_speedup": {"generation": 6.0, "log_prob": 0.0, "update": 6.0, "other": None},
                   "target": 5.0, "met": True}],
        "reward": {"workload": {"steps": 30, "prompts_per_step": 16, "n": 8, "max_tokens": 32, "lr": 1e-3},
                   "window": 5, "met": False, "tolerance": 0.01, "strictly_higher": False,
                   "verl": {"curve": [0.1, 0.2], "first": 0.1, "final_mean": 0.18, "step_s": summary(1.0)},
                   "trl": {"curve": [0.1, 0.3], "first": 0.1, "final_mean": 0.2, "step_s": summary(2.0)}},
    }
    targets = bench_grpo_step.targets(results)
    assert [(t["value"], t["wanted"], t["met"]) for t in targets] == [
        (6.0, ">= 5x", True), (0.18, ">= TRL's - 0.010 (2 s.e.)", False)]
    text = bench_grpo_step.report(results)
    assert "| tiny | **6.00x** |" in text and "NOT MET" in text  # the reward target
    assert "about 8.0 s, 7.50x faster than TRL" in text  # the step without verl-cpp's 2 s log-prob pass
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"title": "t", "report": "", "targets": [], "data": results}))
    assert bench_grpo_step.main(["--from-json", str(path), "--results-md", str(tmp_path / "r.md")]) == 0
    assert (tmp_path / "r.md").read_text() == text + "\n"


def test_precision_part_runs_by_default_only_on_a_cpu_with_bf16_matrix_instructions(capsys):
    # Where bf16 matrix products are emulated (this AVX2 EPYC), the part takes hours: skipped unless named.
    from verl import _C

    native = _C.workers.cpu_has_native_bf16_matmul()
    parts = bench_grpo_step.default_parts()
    assert parts[:3] == ["speed", "reward", "scaling"]
    assert ("precision" in parts) == native
    out = capsys.readouterr().out
    assert ("precision: skipped" in out) == (not native), out
    assert native or "--parts precision" in out
