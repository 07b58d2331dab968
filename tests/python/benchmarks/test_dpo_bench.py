"""The DPO benchmark's own logic (benchmarks/dpo/): what could silently make its comparison unfair or its report
wrong -- the checkpoint's pad / EOS ids, the pair texts and their token ids as TRL's DPOTrainer makes them, the
verl-cpp side's per-step records from a real (toy-size) run, and the report's curve differences. No TRL needed, no
timed assertions."""

from __future__ import annotations

import math
import os
import sys

import pytest

BENCH_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "..", "benchmarks", "dpo")
sys.path.insert(0, BENCH_DIR)
import bench_dpo  # noqa: E402
import dpo_common as common  # noqa: E402
import dpo_sides  # noqa: E402


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("dpo-bench") / "tiny")
    common.write_checkpoint(path, "tiny", seed=0)
    return path


def test_pad_and_eos_are_the_models_last_ids(tiny_checkpoint):
    import transformers

    vocab = common.MODELS["tiny"]["vocab_size"]
    tok = transformers.AutoTokenizer.from_pretrained(tiny_checkpoint)
    config = transformers.AutoConfig.from_pretrained(tiny_checkpoint)
    assert config.vocab_size == vocab
    assert (tok.pad_token_id, tok.eos_token_id) == (vocab - 2, vocab - 1)
    assert (config.pad_token_id, config.eos_token_id) == (vocab - 2, vocab - 1)
    assert len(tok) == vocab  # every id the tokenizer can produce has an embedding row


def test_pairs_keep_the_whole_prompt_and_end_in_eos(tiny_checkpoint):
    import transformers

    tok = transformers.AutoTokenizer.from_pretrained(tiny_checkpoint)
    rows = common.make_pair_texts(20, 24, (4, 12), seed=3)
    assert rows == common.make_pair_texts(20, 24, (4, 12), seed=3)  # deterministic: both sides get the same rows
    for row in rows:
        ids = common.expected_pair_ids(tok, row, tok.eos_token)
        assert ids["prompt_ids"] == tok(row["prompt"])["input_ids"]  # no prompt token lost at the boundary
        for side, case in (("chosen", str.islower), ("rejected", str.isupper)):
            assert ids[f"{side}_ids"][-1] == tok.eos_token_id
            text = tok.decode(ids[f"{side}_ids"][:-1])
            assert text == row[side] and case(text.strip())
            assert 4 <= len(ids[f"{side}_ids"]) - 1 <= 2 * 12  # 2n letters: n tokens if every pair merges, 2n if none


def test_common_prefix_length():
    assert common.common_prefix_length([1, 2, 3], [1, 2, 4, 5]) == 2
    assert common.common_prefix_length([1, 2], [1, 2, 3]) == 2
    assert common.common_prefix_length([], [1]) == 0


def test_verl_side_records_a_real_step(tiny_checkpoint):
    import transformers

    tok = transformers.AutoTokenizer.from_pretrained(tiny_checkpoint)
    rows = common.make_pair_texts(4, 12, (4, 8), seed=1)
    expected = [common.expected_pair_ids(tok, row, tok.eos_token) for row in rows]
    spec = dict(checkpoint=tiny_checkpoint, rows=rows, expected=expected, pairs_per_step=2, micro_pairs=1, warmup=1,
                steps=1, lr=1e-3, beta=0.1, seed=0, threads=1, pad_id=tok.pad_token_id)
    out = dpo_sides.run_verl(spec)
    first, second = out["steps"]
    # policy == reference before the first update: every log-ratio is 0, the loss log 2, no margin
    assert first["loss"] == pytest.approx(math.log(2), abs=1e-6)
    assert first["rewards/margins"] == pytest.approx(0.0, abs=1e-6)
    assert first["grad_norm"] > 0 and second["loss"] != pytest.approx(math.log(2), abs=1e-6)
    lengths = [len(p["prompt_ids"]) + len(p[f"{s}_ids"]) for p in expected[:2] for s in ("chosen", "rejected")]
    assert first["tokens"] == sum(lengths) and first["padded_tokens"] == 4 * max(lengths)


def test_step_flops_by_hand_for_the_tiny_model():
    # tiny: hidden 128, intermediate 384, 8 layers, 4 heads (head_dim 32), 2 kv heads (kv size 64), vocab 8192
    layer_weights = 8 * (3 * 128 * 384 + 128 * (2 * 128 + 2 * 64))
    forward = 2 * layer_weights * (8 + 9) + 2 * (8 * 8 + 9 * 9) * 32 * 4 * 8 + 2 * 8192 * 128 * (3 + 4)
    assert common.forward_flops("tiny", [8, 9], [3, 4]) == forward
    expected = [{"prompt_ids": [1] * 5, "chosen_ids": [2] * 3, "rejected_ids": [3] * 4}]
    # the policy's forward + backward (3 forwards) and the reference's forward
    assert bench_dpo.step_flops("tiny", {"pairs_per_step": 1, "expected": expected}, 0) == 4 * forward
