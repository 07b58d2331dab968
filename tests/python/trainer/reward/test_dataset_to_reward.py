"""The pieces fit: RLHFDataset rows -> loader batch (DataProto) -> a rollout's tensors -> reward manager."""

from __future__ import annotations

import json

import torch

import verl
from verl.trainer.ppo.reward import compute_reward, load_reward_manager
from verl.utils.dataset import ResumableDataLoader, RLHFDataset, collate_to_dataproto


def test_gsm8k_rows_flow_into_rewards(tmp_path, tokenizer):
    rows = [{"data_source": "openai/gsm8k", "prompt": [{"role": "user", "content": f"What is {i} + {i}?"}],
             "reward_model": {"style": "rule", "ground_truth": str(2 * i)}, "extra_info": {"index": i}}
            for i in range(6)]
    path = tmp_path / "train.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = verl.load_config(overrides=["data.max_prompt_length=32", "data.max_response_length=8",
                                      "data.train_batch_size=4"])
    dataset = RLHFDataset(str(path), tokenizer, cfg.data)
    loader = ResumableDataLoader(dataset, 4, shuffle=True, seed=0, drop_last=True, collate_fn=collate_to_dataproto)
    batch = next(iter(loader))
    assert isinstance(batch, verl.DataProto) and batch.batch["input_ids"].shape == (4, 32)

    # what the rollout adds: right-padded responses; every other one answers correctly
    truths = [rm["ground_truth"] for rm in batch.non_tensor_batch["reward_model"]]
    texts = [f"#### {t}" if i % 2 == 0 else "#### 999" for i, t in enumerate(truths)]
    responses = torch.full((4, 8), tokenizer.pad_token_id)
    response_mask = torch.zeros((4, 8), dtype=torch.long)
    for i, text in enumerate(texts):
        ids = tokenizer.encode(text) + [tokenizer.eos_token_id]
        responses[i, :len(ids)] = torch.tensor(ids)
        response_mask[i, :len(ids)] = 1
    batch.batch["prompts"] = batch.batch["input_ids"]
    batch.batch["responses"] = responses
    batch.batch["attention_mask"] = torch.cat([batch.batch["attention_mask"], response_mask], dim=1)

    reward_tensor, extra = compute_reward(batch, load_reward_manager(cfg, tokenizer, num_examine=0))
    assert reward_tensor.sum(-1).tolist() == [1.0, 0.0, 1.0, 0.0]
    last = response_mask.sum(-1) - 1
    assert reward_tensor[torch.arange(4), last].tolist() == [1.0, 0.0, 1.0, 0.0]
    assert extra == {}
