"""verl.trainer.ppo.metric_utils on what verl code passes (issue 16 item 6): objects shaped like a DataProto (a
``.batch`` dict of tensors, a ``.meta_info`` dict), and a batch carrying verl's meta_info["global_token_num"]."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

import verl
from verl import DataProto
from verl.trainer.ppo.metric_utils import (_compute_response_info, compute_data_metrics, compute_throughout_metrics,
                                           compute_timing_metrics)

TENSORS = {
    "token_level_scores": torch.tensor([[0.0, 2.0], [0.0, 4.0]]),
    "token_level_rewards": torch.tensor([[0.0, 1.0], [0.0, 3.0]]),
    "advantages": torch.tensor([[0.5, 0.5], [-0.5, -0.5]]),
    "returns": torch.tensor([[1.0, 1.0], [3.0, 3.0]]),
    "responses": torch.zeros(2, 2, dtype=torch.long),
    "attention_mask": torch.tensor([[0, 1, 1, 1], [1, 1, 1, 0]]),
    "response_mask": torch.tensor([[1, 1], [1, 0]]),
    "values": torch.tensor([[1.0, 1.0], [3.0, 3.0]]),
}


def test_data_metrics_of_an_object_shaped_like_a_data_proto():
    duck = SimpleNamespace(batch=dict(TENSORS), meta_info={})
    metrics = compute_data_metrics(duck, use_critic=True)
    assert metrics == compute_data_metrics(DataProto.from_dict(tensors=dict(TENSORS)), use_critic=True)
    assert metrics["critic/score/mean"] == 3.0 and metrics["critic/rewards/mean"] == 2.0
    assert metrics["response_length/mean"] == 1.5 and metrics["prompt_length/mean"] == 1.5


def test_timing_metrics_per_token():
    duck = SimpleNamespace(batch=dict(TENSORS))
    metrics = compute_timing_metrics(duck, {"gen": 0.3, "ref": 0.6})
    assert metrics["timing_s/gen"] == 0.3
    assert metrics["timing_per_token_ms/gen"] == pytest.approx(300 / 3)  # 3 response tokens
    assert metrics["timing_per_token_ms/ref"] == pytest.approx(600 / 6)  # 6 valid tokens


def test_response_info():
    info = _compute_response_info(SimpleNamespace(batch=dict(TENSORS)))
    assert info["prompt_length"].tolist() == [1.0, 2.0] and info["response_length"].tolist() == [2.0, 1.0]
    assert info["response_mask"].tolist() == [[1, 1], [1, 0]]


def test_throughput_counts_global_token_num_when_the_batch_carries_it():
    only_meta = SimpleNamespace(batch=object(), meta_info={"global_token_num": [100, 200, 300]})
    metrics = compute_throughout_metrics(only_meta, {"step": 2.0}, n_gpus=2)
    assert metrics == {"perf/total_num_tokens": 600.0, "perf/time_per_step": 2.0, "perf/throughput": 150.0}
    # without it: the valid tokens of attention_mask
    batch = DataProto.from_dict(tensors=dict(TENSORS))
    assert compute_throughout_metrics(batch, {"step": 1.0})["perf/total_num_tokens"] == 6.0
    batch.meta_info["global_token_num"] = [4, "x"]
    with pytest.raises(verl.VerlTypeError, match="global_token_num"):
        compute_throughout_metrics(batch, {"step": 1.0})
