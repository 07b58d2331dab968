"""verl.trainer.ppo.reward: custom_reward_function from a file, load_reward_manager from the config tree,
compute_reward."""

from __future__ import annotations

import textwrap

import pytest

import verl
from verl.trainer.ppo.reward import compute_reward, get_custom_reward_fn, load_reward_manager
from verl.workers.reward_manager import BatchRewardManager, DAPORewardManager, NaiveRewardManager

PROMPTS = ["Q: 9*8?", "What is one plus one?", "Hi"]
RESPONSES = ["72", "3", "I do not know"]
TRUTHS = ["72", "2", "5"]


@pytest.fixture
def reward_file(tmp_path):
    path = tmp_path / "my_reward.py"
    path.write_text(textwrap.dedent("""
        def compute_score(data_source, solution_str, ground_truth, extra_info=None, bonus=0.0):
            return float(solution_str == ground_truth) + bonus

        def by_length(response):
            return {"score": float(len(response)), "length": len(response)}
    """))
    return str(path)


def test_no_custom_function_by_default():
    assert get_custom_reward_fn(verl.load_config()) is None


def test_custom_function_with_reward_kwargs(reward_file, batch_maker, tokenizer):
    cfg = verl.load_config(overrides=[f"reward.custom_reward_function.path={reward_file}",
                                      "+reward.custom_reward_function.reward_kwargs.bonus=0.25"])
    fn = get_custom_reward_fn(cfg)
    # called as verl calls it; reward_kwargs merged in
    assert fn(data_source="x", solution_str="1", ground_truth="1") == 1.25
    manager = load_reward_manager(cfg, tokenizer, num_examine=0)
    assert isinstance(manager, NaiveRewardManager)
    tensor, extra = compute_reward(batch_maker(PROMPTS, RESPONSES, TRUTHS), manager)
    assert tensor.sum(-1).tolist() == [1.25, 0.25, 0.25] and extra == {}


def test_legacy_top_level_section_and_other_forms(reward_file, batch_maker, tokenizer):
    cfg = verl.load_config(overrides=[f"custom_reward_function.path={reward_file}",
                                      "custom_reward_function.name=by_length"])
    tensor, extra = compute_reward(batch_maker(PROMPTS, RESPONSES, TRUTHS), load_reward_manager(cfg, tokenizer, 0))
    assert tensor.sum(-1).tolist() == [2.0, 1.0, 13.0]
    assert extra["length"] == [2, 1, 13] and extra["score"] == [2.0, 1.0, 13.0]


def test_custom_function_errors(tmp_path, reward_file):
    missing = verl.load_config(overrides=[f"reward.custom_reward_function.path={tmp_path}/nope.py"])
    with pytest.raises(verl.ConfigError, match="nope.py"):
        get_custom_reward_fn(missing)
    wrong_name = verl.load_config(overrides=[f"reward.custom_reward_function.path={reward_file}",
                                             "reward.custom_reward_function.name=score_it"])
    with pytest.raises(verl.ConfigError, match="no attribute 'score_it'.*by_length"):
        get_custom_reward_fn(wrong_name)
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('import-time failure')\n")
    with pytest.raises(verl.ConfigError, match="import-time failure"):
        get_custom_reward_fn(verl.load_config(overrides=[f"reward.custom_reward_function.path={broken}"]))


def test_manager_selection_and_dapo_overlong_from_config(batch_maker, tokenizer):
    assert isinstance(load_reward_manager(verl.load_config(), tokenizer, 0), NaiveRewardManager)
    batch = load_reward_manager(verl.load_config(overrides=["reward.reward_manager.name=batch"]), tokenizer, 0)
    assert isinstance(batch, BatchRewardManager)
    legacy = load_reward_manager(verl.load_config(overrides=["reward_model.reward_manager=dapo"]), tokenizer, 0)
    assert isinstance(legacy, DAPORewardManager) and not legacy.overlong_enabled

    cfg = verl.load_config(overrides=[
        "reward.reward_manager.name=dapo", "data.max_response_length=16",
        "+reward.reward_kwargs.overlong_buffer_cfg.enable=true", "+reward.reward_kwargs.overlong_buffer_cfg.len=4",
        "+reward.reward_kwargs.overlong_buffer_cfg.penalty_factor=1.0"])
    dapo = load_reward_manager(cfg, tokenizer, 0)
    assert dapo.overlong_enabled and dapo.max_resp_len == 16 and dapo.overlong_len == 4
    assert dapo.overlong_reward(14) == -0.5

    with pytest.raises(verl.ConfigError, match="Unknown reward manager: prime"):
        load_reward_manager(verl.load_config(overrides=["reward.reward_manager.name=prime"]), tokenizer, 0)


def test_importlib_manager_source(tmp_path, tokenizer):
    path = tmp_path / "manager.py"
    path.write_text(textwrap.dedent("""
        from verl.workers.reward_manager import NaiveRewardManager

        class MyManager(NaiveRewardManager):
            pass
    """))
    cfg = verl.load_config(overrides=["reward.reward_manager.source=importlib", "reward.reward_manager.name=MyManager",
                                      f"reward.reward_manager.module.path={path}"])
    manager = load_reward_manager(cfg, tokenizer, 0)
    assert type(manager).__name__ == "MyManager" and isinstance(manager, NaiveRewardManager)


def test_compute_reward_with_plain_callable(batch_maker):
    import torch

    data = batch_maker(PROMPTS, RESPONSES, TRUTHS)
    tensor, extra = compute_reward(data, lambda d: torch.ones(len(d), 16))
    assert tensor.shape == (3, 16) and extra == {}
