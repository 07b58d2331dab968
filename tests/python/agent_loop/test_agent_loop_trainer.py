"""Tool calls through verl.PPOTrainer (actor_rollout_ref.rollout.multi_turn.enable; issue 19 item 2): a step whose
rollout is tool_agent on the trainer's own engine, with the model of test_agent_loop_llm that always calls
add(3, 4). What the step must do with a multi-turn batch, checked against what the loop produced: the tool's tokens
are in the response with response_mask 0 and no log-prob, the reward function reads the whole response (tool
output included, as verl decodes it), advantages vanish on the tool's tokens, the model's tokens are recomputed
with the rollout's log-probs, and the step reports verl's num_turns/* and tool_call_counts/*."""

from __future__ import annotations

import math

import torch

from verl import PPOTrainer, RLConfig

from .conftest import forced_tool_call_model

RESPONSE_LENGTH = 96


def add(a: int, b: int) -> int:
    """Adds two integers.

    Args:
        a: the first integer
        b: the second integer
    """
    return a + b


def test_tool_agent_step_through_the_trainer(qwen3, tmp_path):
    model, chain = forced_tool_call_model(qwen3)
    rows = [{"data_source": "toy", "prompt": [{"role": "user", "content": f"What is 3 + 4? ({i})"}],
             "reward_model": {"ground_truth": str(7 + i)}} for i in range(2)]  # only the first one's answer is 7
    overrides = [
        "algorithm.adv_estimator=reinforce_plus_plus", "data.max_prompt_length=512",
        f"data.max_response_length={RESPONSE_LENGTH}", "data.train_batch_size=2", "actor_rollout_ref.rollout.n=2",
        "actor_rollout_ref.actor.ppo_mini_batch_size=2", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4",
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4", "actor_rollout_ref.actor.optim.lr=0.01",
        "actor_rollout_ref.model.enable_gradient_checkpointing=false",
        "actor_rollout_ref.actor.fsdp_config.dtype=float32", "trainer.device=cpu", "trainer.logger=[console]",
        f"trainer.default_local_dir={tmp_path}/ckpt",
        "actor_rollout_ref.rollout.multi_turn.enable=true", "actor_rollout_ref.rollout.multi_turn.max_assistant_turns=2",
        "actor_rollout_ref.rollout.agent.default_agent_loop=tool_agent",  # the rows name no loop
        "trainer.balance_batch=false",  # rows in prompt order: 0, 0, 1, 1
    ]
    seen: list[str] = []

    def reward(response: str, ground_truth: str) -> float:
        seen.append(response)
        return float(ground_truth in response)

    trainer = PPOTrainer(config=RLConfig(overrides=overrides), reward_fn=reward, model=model, tokenizer=qwen3,
                         tools=[add])
    assert [t.name for t in trainer.agent_rollout.tools] == ["add"]
    metrics = trainer.step(rows)
    batch = trainer.last_batch

    block = qwen3.encode("\n<|im_start|>user\n<tool_response>\n7\n</tool_response><|im_end|>\n<|im_start|>assistant\n",
                         add_special_tokens=False)
    response = chain + block + chain  # call, the tool's answer, call again: max_assistant_turns=2 ends it
    mask = [1] * len(chain) + [0] * len(block) + [1] * len(chain)
    n = len(response)
    assert n <= RESPONSE_LENGTH
    schemas = [trainer.agent_rollout.tools[0].tool_schema.model_dump(exclude_unset=True, exclude_none=True)]
    for row in range(4):
        prompt = qwen3.apply_chat_template(rows[row // 2]["prompt"], tools=schemas, add_generation_prompt=True,
                                           tokenize=True)
        assert batch.batch["prompts"][row, -len(prompt):].tolist() == prompt
        assert batch.batch["responses"][row, :n].tolist() == response
        assert batch.batch["response_mask"][row].tolist() == mask + [0] * (RESPONSE_LENGTH - n)
        assert batch.batch["attention_mask"][row, -RESPONSE_LENGTH:].tolist() == [1] * n + [0] * (RESPONSE_LENGTH - n)
    model_tokens = batch.batch["response_mask"].bool()
    assert bool((batch.batch["rollout_log_probs"][~model_tokens] == 0).all())
    # the old policy's recomputation of the model's tokens is the rollout's (same weights): forced, probability ~1
    torch.testing.assert_close(batch.batch["old_log_probs"][model_tokens], batch.batch["rollout_log_probs"][model_tokens],
                               rtol=0, atol=1e-5)
    assert float(batch.batch["old_log_probs"][model_tokens].min()) > -1e-3

    # the reward function saw the decoded multi-turn response: the tool's "7" makes the first prompt's rows right
    assert len(seen) == 4 and all("<tool_response>\n7\n</tool_response>" in text for text in seen)
    assert batch.batch["token_level_scores"].sum(-1).tolist() == [1.0, 1.0, 0.0, 0.0]
    advantages = batch.batch["advantages"]
    assert bool((advantages[~model_tokens] == 0).all())
    assert bool((advantages[model_tokens] != 0).all())  # whitened returns of rewards 1, 1, 0, 0

    # verl's agent-loop columns and metrics: the prompt, two assistant turns and one tool turn; one call each
    assert batch.non_tensor_batch["__num_turns__"].tolist() == [4] * 4
    assert batch.non_tensor_batch["tool_call_counts"].tolist() == [1] * 4
    assert (metrics["num_turns/min"], metrics["num_turns/mean"], metrics["num_turns/max"]) == (4, 4, 4)
    assert (metrics["tool_call_counts/min"], metrics["tool_call_counts/mean"]) == (1, 1)
    assert metrics["response_length/mean"] == n
    assert math.isfinite(metrics["actor/pg_loss"]) and metrics["actor/grad_norm"] > 0
