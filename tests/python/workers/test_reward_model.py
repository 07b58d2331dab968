"""verl.workers.RewardModelWorker against transformers' Qwen2ForSequenceClassification (a tiny random checkpoint
saved to disk): rm_scores equal the reference's score at each sequence's last token, placed on the last valid
response token; the token-budget batching gives the same scores; re-rendering with the RM's chat template
scores the template's text; bad configs are ConfigErrors naming the key."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import verl
from verl import DataProto
from verl.tokenizer import load_tokenizer
from verl.workers import RewardModelWorker

from reward_model_checkpoint import TOKENIZER_DIR, VOCAB, write_rm_checkpoint

PAD = 0


@pytest.fixture(scope="module")
def rm_dir(tmp_path_factory) -> str:
    return write_rm_checkpoint(str(tmp_path_factory.mktemp("tiny_rm")))


@pytest.fixture(scope="module")
def reference(rm_dir):
    transformers = pytest.importorskip("transformers")
    model = transformers.Qwen2ForSequenceClassification.from_pretrained(rm_dir, dtype=torch.float32).eval()

    def score(ids: list[int]) -> float:
        # one unpadded sequence: its last token is the last non-pad token transformers pools
        with torch.no_grad():
            return float(model(torch.tensor([ids])).logits[0, 0])

    return score


def verl_batch(prompts: list[list[int]], responses: list[list[int]], prompt_length: int = 7,
               response_length: int = 6) -> DataProto:
    """verl's layout: prompts left-padded, responses right-padded, one attention mask over both."""
    bs = len(prompts)
    input_ids = torch.full((bs, prompt_length + response_length), PAD, dtype=torch.long)
    mask = torch.zeros_like(input_ids)
    for i, (p, r) in enumerate(zip(prompts, responses)):
        input_ids[i, prompt_length - len(p):prompt_length] = torch.tensor(p)
        mask[i, prompt_length - len(p):prompt_length] = 1
        if r:
            input_ids[i, prompt_length:prompt_length + len(r)] = torch.tensor(r)
            mask[i, prompt_length:prompt_length + len(r)] = 1
    return DataProto.from_dict(tensors={"input_ids": input_ids, "attention_mask": mask,
                                        "responses": input_ids[:, prompt_length:].clone()})


PROMPTS = [[5, 17, 40], [100, 7, 8, 9, 10, 11, 12], [3], [250, 251], [60, 61, 62, 63]]
RESPONSES = [[20, 21, 22], [30], [44, 45, 46, 47, 48, 49], [], [70, 71]]


def config(rm_dir: str, **keys) -> dict:
    return {"reward_model.enable": True, "reward_model.model.path": rm_dir, **keys}


def test_rm_scores_match_transformers_last_token_logit(rm_dir, reference):
    worker = RewardModelWorker(config(rm_dir, **{"reward_model.micro_batch_size_per_gpu": 2}))
    rm_scores = worker.compute_rm_score(verl_batch(PROMPTS, RESPONSES)).batch["rm_scores"]
    assert rm_scores.shape == (5, 6) and rm_scores.dtype == torch.float32
    expected = torch.zeros(5, 6)
    for i, (p, r) in enumerate(zip(PROMPTS, RESPONSES)):
        if r:
            expected[i, len(r) - 1] = reference(p + r)
    torch.testing.assert_close(rm_scores, expected, rtol=0, atol=1e-5)
    assert (rm_scores[[0, 1, 2, 4]].abs().sum(-1) > 1e-3).all()  # real, distinct scores, not zeros
    assert len(set(rm_scores.sum(-1).tolist())) == 5


def test_token_budget_batching_gives_the_same_scores(rm_dir):
    batch = verl_batch(PROMPTS, RESPONSES)
    fixed = RewardModelWorker(config(rm_dir, **{"reward_model.micro_batch_size_per_gpu": 1})).compute_rm_score(batch)
    dynamic = RewardModelWorker(config(rm_dir, **{"reward_model.use_dynamic_bsz": True,
                                                  "reward_model.forward_max_token_len_per_gpu": 9}))
    # the sequences hold 6, 8, 7, 2, 6 tokens: 7 + 2 fit a budget of 9, nothing else pairs up
    assert dynamic._micro_batches([6, 8, 7, 2, 6]) == [[0], [1], [2, 3], [4]]
    torch.testing.assert_close(dynamic.compute_rm_score(batch).batch["rm_scores"], fixed.batch["rm_scores"],
                               rtol=0, atol=1e-5)


def test_input_tokenizer_re_renders_with_the_rm_chat_template(rm_dir, reference):
    transformers = pytest.importorskip("transformers")
    hf_tok = transformers.PreTrainedTokenizerFast.from_pretrained(rm_dir)
    tok = load_tokenizer(rm_dir)
    chats = [[{"role": "user", "content": "Compute 3+4."}], [{"role": "user", "content": "Compute 10+20."}]]
    answers = ["7", "30 ok"]
    prompts = [tok.encode(tok.apply_chat_template(c, add_generation_prompt=True, tokenize=False)) for c in chats]
    responses = [tok.encode(a) + [tok.eos_token_id] for a in answers]
    batch = verl_batch(prompts, responses, prompt_length=max(map(len, prompts)), response_length=6)
    raw_prompt = np.empty(2, dtype=object)
    raw_prompt[:] = chats
    batch.non_tensor_batch["raw_prompt"] = raw_prompt
    worker = RewardModelWorker(config(rm_dir, **{"reward_model.model.input_tokenizer": rm_dir}))
    rm_scores = worker.compute_rm_score(batch).batch["rm_scores"]
    for i, (chat, answer) in enumerate(zip(chats, answers)):
        text = hf_tok.apply_chat_template(chat + [{"role": "assistant", "content": answer}],
                                          add_generation_prompt=False, tokenize=False)
        expected = reference(hf_tok(text)["input_ids"])
        assert abs(float(rm_scores[i, len(responses[i]) - 1]) - expected) < 1e-5
        assert float(rm_scores[i].abs().sum()) == pytest.approx(abs(expected), abs=1e-6)  # only the last token
    batch.non_tensor_batch.pop("raw_prompt")
    with pytest.raises(verl.DataError, match="raw_prompt"):
        worker.compute_rm_score(batch)


def test_bad_configs_name_the_key(rm_dir, tmp_path):
    with pytest.raises(verl.ConfigError, match=r"reward_model\.model\.path"):
        RewardModelWorker({"reward_model.enable": True})
    with pytest.raises(verl.ConfigError, match=r"reward_model\.model\.path"):
        RewardModelWorker(config(str(tmp_path / "missing")))
    with pytest.raises(verl.ConfigError, match=r"reward_model\.micro_batch_size_per_gpu"):
        RewardModelWorker(config(rm_dir, **{"reward_model.micro_batch_size_per_gpu": 0}))
    with pytest.raises(verl.ConfigError, match=r"reward_model\.model\.input_tokenizer"):
        RewardModelWorker(config(rm_dir, **{"reward_model.model.input_tokenizer": str(tmp_path)}))


def test_sequence_classifier_round_trips_through_save_pretrained(rm_dir, reference, tmp_path):
    transformers = pytest.importorskip("transformers")
    from verl.models import load_model

    model = load_model(rm_dir, value_head=True)
    assert "score.bias" not in model.state_dict()  # *ForSequenceClassification: a bias-free score head
    model.save_pretrained(tmp_path / "saved")
    with open(tmp_path / "saved" / "config.json", encoding="utf-8") as f:
        assert json.load(f)["architectures"] == ["Qwen2ForSequenceClassification"]
    reloaded = transformers.Qwen2ForSequenceClassification.from_pretrained(tmp_path / "saved", dtype=torch.float32)
    ids = PROMPTS[1] + RESPONSES[1]
    with torch.no_grad():
        assert abs(float(reloaded.eval()(torch.tensor([ids])).logits[0, 0]) - reference(ids)) < 1e-5
