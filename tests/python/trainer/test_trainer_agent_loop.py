"""The PPO trainer generating through verl's agent loops (actor_rollout_ref.rollout.multi_turn.enable; issue 19
item 2): every generation -- training, ReMax's greedy baseline, validation -- runs each row in the agent loop it
names, over the trainer's own engine. With single_turn_agent rows (verl's default loop) that is the engine's
one-shot generation: the same tokens, log-probs, metrics and weights bit for bit. Tool calls through the trainer
are tested in tests/python/agent_loop/test_agent_loop_trainer.py."""

from __future__ import annotations

import json
import math

import pytest
import torch

from verl import PPOTrainer, RLConfig
from verl.errors import ConfigError, DataError

from trainer_helpers import toy_overrides, write_jsonl

AGENT = ["actor_rollout_ref.rollout.multi_turn.enable=true"]
VOLATILE = ("timing_s/", "timing_per_token_ms/", "perf/")  # wall-clock metrics


def digit_fraction(response: str) -> float:
    return sum(c.isdigit() for c in response) / max(len(response), 1)


def make(tiny_model_dir, toy_data, tmp_path, extra=(), estimator="grpo", steps=2, **kwargs):
    cfg = RLConfig(overrides=[*toy_overrides(tiny_model_dir, str(tmp_path), estimator, steps),
                              "trainer.test_freq=1", *extra])
    return PPOTrainer(config=cfg, reward_fn=digit_fraction, train_dataset=toy_data["train"],
                      val_dataset=toy_data["test"], **kwargs)


def comparable(metrics):
    return {k: v for k, v in metrics.items() if not k.startswith(VOLATILE)}


@pytest.mark.parametrize("estimator", ["grpo", "remax"])
def test_single_turn_agent_loops_equal_the_engine_step_bit_for_bit(tiny_model_dir, toy_data, tmp_path, estimator):
    plain = make(tiny_model_dir, toy_data, tmp_path / "plain", estimator=estimator)
    agent = make(tiny_model_dir, toy_data, tmp_path / "agent", AGENT, estimator=estimator)
    assert plain.agent_rollout is None and agent.agent_rollout is not None
    for step in range(2):
        rows = [plain.train_dataset[i] for i in range(4 * step, 4 * step + 4)]
        m_plain, m_agent = plain.step(rows), agent.step(rows)
        a, b = plain.last_batch, agent.last_batch
        for key in ("prompts", "responses", "response_mask", "attention_mask", "rollout_log_probs",
                    "token_level_scores", "old_log_probs", "advantages"):
            assert torch.equal(a.batch[key], b.batch[key]), (step, key)
        if estimator == "remax":  # the greedy baseline went through the agent loop too
            assert torch.equal(a.batch["reward_baselines"], b.batch["reward_baselines"])
        # verl's agent-loop columns and metrics: one turn each (the prompt and the answer), no tool calls
        assert b.non_tensor_batch["__num_turns__"].tolist() == [2] * 16
        assert (m_agent["num_turns/min"], m_agent["num_turns/max"], m_agent["num_turns/mean"]) == (2, 2, 2)
        assert "num_turns/mean" not in m_plain
        extra = {"num_turns/min", "num_turns/max", "num_turns/mean"}
        assert set(comparable(m_agent)) == set(comparable(m_plain)) | extra
        for key, value in comparable(m_plain).items():
            assert value == m_agent[key] or (math.isnan(value) and math.isnan(m_agent[key])), key
    for name, tensor in plain.model.state_dict().items():
        assert torch.equal(tensor, agent.model.state_dict()[name]), name
    # validation (val_kwargs: greedy) through the agent loops gives the same scores, and verl's val-aux/num_turns/*
    turns = {f"val-aux/num_turns/{k}": 2.0 for k in ("min", "max", "mean")}
    assert {**plain.validate(), **turns} == agent.validate()


def test_agent_loop_rows_without_agent_loops_are_refused(tiny_model_dir, toy_data, tmp_path):
    trainer = make(tiny_model_dir, toy_data, tmp_path)
    rows = [dict(trainer.train_dataset[i], agent_name="tool_agent") for i in range(4)]
    with pytest.raises(DataError, match=r"agent_name is \"tool_agent\".*multi_turn\.enable=true"):
        trainer.step(rows)
    rows = [dict(trainer.train_dataset[i], agent_name="single_turn_agent") for i in range(4)]
    assert math.isfinite(trainer.step(rows)["actor/pg_loss"])  # verl's default loop is the engine's generation


def test_unknown_agent_loop_names_the_registry(tiny_model_dir, toy_data, tmp_path):
    trainer = make(tiny_model_dir, toy_data, tmp_path, AGENT)
    rows = [dict(trainer.train_dataset[i], agent_name="no_such_loop") for i in range(4)]
    with pytest.raises(ValueError, match="unknown agent loop 'no_such_loop'.*single_turn_agent.*tool_agent"):
        trainer.step(rows)


def test_agent_loop_config_errors(tiny_model_dir, toy_data, tmp_path):
    with pytest.raises(ConfigError, match="data.return_raw_chat=true"):
        make(tiny_model_dir, toy_data, tmp_path, [*AGENT, "data.return_raw_chat=false"])
    with pytest.raises(ConfigError, match="tools= were given but actor_rollout_ref.rollout.multi_turn.enable is false"):
        make(tiny_model_dir, toy_data, tmp_path, tools=[digit_fraction])
    with pytest.raises(ConfigError, match="agent.default_agent_loop configure agent loops"):
        make(tiny_model_dir, toy_data, tmp_path, ["actor_rollout_ref.rollout.agent.default_agent_loop=tool_agent"])
    with pytest.raises(ConfigError, match="rollout.multi_turn.format"):
        make(tiny_model_dir, toy_data, tmp_path, [*AGENT, "actor_rollout_ref.rollout.multi_turn.format=xml"])
    with pytest.raises(ConfigError, match="use_inference_chat_template"):
        make(tiny_model_dir, toy_data, tmp_path, [*AGENT, "actor_rollout_ref.rollout.multi_turn."
                                                          "use_inference_chat_template=true"])


def test_tool_config_path_counts_tool_schemas_in_the_overlong_filter(tiny_model_dir, tmp_path):
    """verl's data.tool_config_path (the rollout's by default): filter_overlong_prompts measures the prompt rendered
    with the tools' schemas, as tool_agent renders it."""
    import verl
    from verl.utils.dataset import RLHFDataset

    tools = tmp_path / "tools.py"
    tools.write_text('from verl.tools import function_tool\n\n\n@function_tool\n'
                     'def add_for_filter_test(a: int, b: int) -> int:\n    """Adds.\n\n    Args:\n        a: one\n'
                     '        b: two\n    """\n    return a + b\n')
    rows = write_jsonl(tmp_path / "rows.jsonl", [
        {"data_source": "toy", "prompt": [{"role": "user", "content": "Compute 1+2."}],
         "reward_model": {"ground_truth": "3"}}])
    tokenizer = verl.load_tokenizer(tiny_model_dir)
    template = ("{% if tools %}{% for t in tools %}{{ t | tojson }}{% endfor %}{% endif %}"
                "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
                "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    tokenizer.chat_template = template
    base = {"max_prompt_length": 24, "filter_overlong_prompts": True}
    assert len(RLHFDataset(rows, tokenizer, base)) == 1
    with_tools = RLHFDataset(rows, tokenizer, {**base, "function_tool_path": str(tools)})
    assert len(with_tools) == 0  # the schema's JSON does not fit in 24 tokens
    assert json.loads(json.dumps(with_tools.tool_schemas))[0]["function"]["name"] == "add_for_filter_test"
    with pytest.raises(ConfigError, match="data.tool_config_path"):
        RLHFDataset(rows, tokenizer, {**base, "tool_config_path": str(tmp_path / "missing.yaml")})
