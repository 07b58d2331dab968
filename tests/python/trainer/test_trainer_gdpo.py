"""adv_estimator=gdpo through the C++ trainer (issue 16 item 3): the reward components come from the reward
function's extra-info columns named by +algorithm.gdpo_reward_keys, as verl's compute_advantage passes them."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import verl
from verl import PPOTrainer, RLConfig
from verl.trainer.ppo import core_algos

from trainer_helpers import toy_overrides


def two_part_reward(response: str) -> dict:
    """score = digits + short; the two components are returned beside it (verl's compute_score dict form)."""
    digits = sum(c.isdigit() for c in response) / max(len(response), 1)
    short = float(len(response.strip()) < 6)
    return {"score": digits + short, "digits": digits, "short": short}


def make_trainer(tiny_model_dir, toy_data, tmp_path, extra, estimator="gdpo", reward=two_part_reward):
    cfg = RLConfig(overrides=[*toy_overrides(tiny_model_dir, str(tmp_path), estimator, 1), *extra])
    return PPOTrainer(config=cfg, reward_fn=reward, train_dataset=toy_data["train"])


KEYS = ["+algorithm.gdpo_reward_keys=[digits,short]", "+algorithm.gdpo_reward_weights=[1.0,0.5]"]


def test_gdpo_advantages_are_verls_from_the_reward_components(tiny_model_dir, toy_data, tmp_path):
    trainer = make_trainer(tiny_model_dir, toy_data, tmp_path, KEYS)
    rows = [trainer.train_dataset[i] for i in range(4)]
    rollouts = trainer.collect_rollouts(rows)
    trainer.compute_rewards(rollouts)
    metrics = trainer.optimize(rollouts)
    last = trainer.last_batch
    digits = np.asarray(last.non_tensor_batch["digits"], dtype=np.float32)
    short = np.asarray(last.non_tensor_batch["short"], dtype=np.float32)
    assert digits.std() > 0 and short.std() > 0  # both components vary, so both shape the advantage
    # verl's compute_advantage call: config, non_tensor_batch and batch given, index = uid
    expected, _ = core_algos.compute_gdpo_outcome_advantage(
        token_level_rewards=last.batch["token_level_rewards"], response_mask=last.batch["response_mask"],
        index=last.non_tensor_batch["uid"], config={"gdpo_reward_keys": ["digits", "short"],
                                                    "gdpo_reward_weights": [1.0, 0.5]},
        non_tensor_batch=last.non_tensor_batch, batch=last.batch)
    assert torch.equal(last.batch["advantages"], expected)
    # not GRPO on the summed score: normalising the components one by one gives other advantages
    grpo, _ = core_algos.compute_grpo_outcome_advantage(last.batch["token_level_rewards"], last.batch["response_mask"],
                                                        last.non_tensor_batch["uid"])
    assert not torch.allclose(last.batch["advantages"], grpo, atol=1e-3)
    assert metrics["gdpo/digits/mean"] == pytest.approx(float(digits.mean()), rel=1e-6)
    assert metrics["gdpo/short/std"] == pytest.approx(float(short.std()), rel=1e-6)
    assert metrics["gdpo/short/max"] == float(short.max()) and metrics["gdpo/digits/min"] == float(digits.min())


@pytest.mark.parametrize("extra, estimator, match", [
    ([], "gdpo", "adv_estimator=gdpo requires \\+algorithm.gdpo_reward_keys"),
    (["+algorithm.gdpo_reward_keys=[digits,short]", "+algorithm.gdpo_reward_weights=[1.0]"], "gdpo",
     "gdpo_reward_weights has 1 weights for 2 gdpo_reward_keys"),
    (["+algorithm.gdpo_reward_keys=[digits]"], "grpo", "read by adv_estimator=gdpo only"),
])
def test_gdpo_settings_are_checked(tiny_model_dir, toy_data, tmp_path, extra, estimator, match):
    with pytest.raises(verl.ConfigError, match=match):
        make_trainer(tiny_model_dir, toy_data, tmp_path, extra, estimator)


def test_a_missing_reward_component_is_a_data_error(tiny_model_dir, toy_data, tmp_path):
    trainer = make_trainer(tiny_model_dir, toy_data, tmp_path, ["+algorithm.gdpo_reward_keys=[digits,length]"])
    rollouts = trainer.collect_rollouts([trainer.train_dataset[i] for i in range(4)])
    trainer.compute_rewards(rollouts)
    with pytest.raises(verl.DataError, match="GDPO reward key 'length'"):
        trainer.optimize(rollouts)
