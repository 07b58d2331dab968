"""The tutorials' snippets (issues 16 and 40), on a tiny random Qwen2 checkpoint with a real BPE tokenizer (a local
directory instead of a Hub name): the actor form with ``get_actor_model`` / ``HFActor`` and ``trainer.step(rows)``,
the environment form with ``collect_rollouts`` / ``compute_rewards`` / ``optimize``, seed 001's YAML with its
``compute_reward(data_batch)``, and the issue's own one-row step. The ``test_verbatim_*`` tests are seed 003's
``quick_start_gsm8k.py`` (both forms) and seed 000's ``RLConfig(algorithm="ppo", ...)`` copied as the tutorials write
them, with only the model name replaced: no ``config=``, no ``data_source`` in the row. Each checks what the step did
with real numbers (the rewards the function returned reach the metrics), not only that it ran."""

from __future__ import annotations

import json
import math
import textwrap

import pytest
import torch

import verl
from verl.trainer import PPOTrainer, RLConfig
from verl.utils.reward_score import gsm8k
from verl.utils.tracking import read_metrics

transformers = pytest.importorskip("transformers")


def digit_fraction(response: str) -> float:
    return sum(c.isdigit() for c in response) / max(len(response), 1)


def read_rows(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def decoded_responses(trainer: PPOTrainer, batch: verl.DataProto) -> list[str]:
    lengths = batch.batch["response_mask"].sum(-1).tolist()
    return [trainer.tokenizer.decode(ids[:int(n)], skip_special_tokens=True)
            for ids, n in zip(batch.batch["responses"].tolist(), lengths)]


def test_actor_form_with_get_actor_model_and_get_dataloader(tiny_model_dir, toy_data, tmp_path):
    # the tutorial, with a local checkpoint directory as model_name
    actor = verl.models.get_actor_model(model_name=tiny_model_dir, device_map="auto", torch_dtype="auto")
    dataloader = verl.data.get_dataloader(toy_data["train"], batch_size=4)

    def reward_fn(response, ground_truth):
        return digit_fraction(response) + float(ground_truth in response)

    trainer = PPOTrainer(actor=actor, reward_fn=reward_fn, rollout_batch_size=4, num_epochs=1,
                         config=RLConfig(algorithm="grpo", n=2, max_response_length=8, output_dir=str(tmp_path)))
    losses = []
    for step, batch in enumerate(dataloader):
        if step == 2:
            break
        loss = trainer.step(batch)
        print(f"step {step}: loss {loss:.4f}")
        losses.append(loss)
    assert [m.metrics["training/global_step"] for m in losses] == [1, 2]
    for loss in losses:
        assert f"{loss:.4f}" == f"{loss.metrics['actor/pg_loss']:.4f}" and float(loss) == loss["actor/pg_loss"]
        assert math.isfinite(float(loss))
    # the rewards of the last step are reward_fn's on the decoded responses
    last = trainer.last_batch
    truths = [rm["ground_truth"] for rm in last.non_tensor_batch["reward_model"]]
    expected = [reward_fn(r, g) for r, g in zip(decoded_responses(trainer, last), truths)]
    assert losses[-1].metrics["critic/score/mean"] == pytest.approx(sum(expected) / len(expected), abs=1e-6)
    # the actor trained is the model the tutorial built, and the defaults were settled for it
    assert trainer.model is actor and trainer.config["data.train_batch_size"] == 4
    assert trainer.config["actor_rollout_ref.actor.ppo_mini_batch_size"] == 4  # clipped from verl's 256
    assert trainer.config["actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"] == 8  # 4 prompts x n=2
    assert trainer.config["trainer.total_epochs"] == 1
    assert trainer.tokenizer.name_or_path == tiny_model_dir  # found beside the checkpoint


def test_hf_actor_form_with_transformers_objects(tiny_model_dir, toy_data, tmp_path):
    hf_model = transformers.AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    tokenizer = transformers.AutoTokenizer.from_pretrained(tiny_model_dir)
    actor = verl.models.HFActor(hf_model)
    trainer = PPOTrainer(actor=actor, tokenizer=tokenizer, reward_fn=lambda response: float(len(response)),
                         rollout_batch_size=2, num_epochs=1,
                         config=RLConfig(algorithm="grpo", n=2, max_response_length=8, output_dir=str(tmp_path)))
    rows = read_rows(toy_data["train"])[:2]
    before = {k: v.clone() for k, v in actor.state_dict().items()}
    result = trainer.step(rows)
    assert math.isfinite(float(result)) and result.metrics["training/global_step"] == 1
    responses = decoded_responses(trainer, trainer.last_batch)
    assert result.metrics["critic/score/mean"] == pytest.approx(sum(map(len, responses)) / len(responses))
    # the step trained the HFActor's weights (the transformers model is a separate copy, untouched)
    changed = [k for k, v in actor.state_dict().items() if not torch.equal(v, before[k])]
    assert changed
    name = changed[0]
    assert torch.equal(hf_model.state_dict()[name], before[name])


def test_env_form_collect_compute_optimize(tiny_model_dir, tmp_path):
    tokenizer = transformers.AutoTokenizer.from_pretrained(tiny_model_dir)
    model = transformers.AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    prompts = ["Compute 2+3.", "Compute 7+1.", "Compute 4+4.", "Compute 9+0."]
    env = verl.envs.LanguageModelEnv(tokenizer, model, prompts=prompts, reward_fn=digit_fraction)
    trainer = PPOTrainer(config=RLConfig(algorithm="grpo", n=4, batch_size=2, max_response_length=8,
                                         output_dir=str(tmp_path)), env=env)
    seen_prompts = []
    for epoch in range(2):
        trajectories = trainer.collect_rollouts()
        rewards = trainer.compute_rewards(trajectories)
        metrics = trainer.optimize(trajectories, rewards)
        print(f"epoch {epoch}: reward {rewards.mean():.3f}")
        assert rewards.shape == (8,) and rewards.dtype == torch.float32
        expected = [digit_fraction(r) for r in decoded_responses(trainer, trajectories)]
        assert rewards.tolist() == pytest.approx(expected)
        assert metrics["critic/score/mean"] == pytest.approx(rewards.mean().item(), abs=1e-6)
        assert metrics["training/global_step"] == epoch + 1
        seen_prompts += [tokenizer.decode(ids, skip_special_tokens=True)
                         for ids in trajectories.batch["prompts"][::4].tolist()]
    # two batches of two prompts: one pass over the env's four prompts
    assert sorted(p.split("user\n")[-1].split("\n")[0] for p in seen_prompts) == sorted(prompts)


def test_optimize_uses_the_rewards_it_is_given(tiny_model_dir, tmp_path):
    env = verl.envs.LanguageModelEnv(verl.load_tokenizer(tiny_model_dir), tiny_model_dir,
                                     prompts=["Compute 1+1.", "Compute 2+2."], reward_fn=digit_fraction)
    trainer = PPOTrainer(config=RLConfig(algorithm="grpo", n=4, batch_size=2, max_response_length=8,
                                         output_dir=str(tmp_path)), env=env)
    trajectories = trainer.collect_rollouts()
    trainer.compute_rewards(trajectories)
    shaped = torch.full((8,), 0.25)  # the same reward everywhere: every GRPO advantage is zero
    metrics = trainer.optimize(trajectories, shaped)
    assert metrics["critic/score/mean"] == pytest.approx(0.25)
    assert metrics["critic/advantages/max"] == 0.0 and metrics["critic/advantages/min"] == 0.0
    assert float(metrics) == 0.0  # no advantage, no policy-gradient loss


def test_seed_001_yaml_and_batch_reward(tiny_model_dir, toy_data, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config_path = tmp_path / "grpo.yaml"
    config_path.write_text(textwrap.dedent(f"""
        model:
          name_or_path: {tiny_model_dir}
        algorithm:
          name: grpo
          grpo:
            num_generations: 4
            beta: 0.04
            clip_ratio: 0.2
        training:
          learning_rate: 1.0e-3
          batch_size: 2
          max_steps: 2
          train_files: {toy_data["train"]}
          output_dir: {tmp_path / "ckpt"}
          project_name: seed
          experiment_name: "001"
          logger: [console]
        generation:
          max_new_tokens: 8
          temperature: 1.0
        reward:
          type: function
    """))
    calls = []

    def compute_reward(data_batch):
        calls.append(len(data_batch["responses"]))
        return [float(gt in response) + 0.1 * len(response)
                for response, gt in zip(data_batch["responses"], data_batch["ground_truth"])]

    trainer = PPOTrainer(config=str(config_path), reward_fn=compute_reward)
    trainer.fit()
    assert trainer.global_steps == 2 and calls == [8, 8]  # 2 prompts x 4 generations per step
    records = [m for _, m in read_metrics(tmp_path / "seed" / "001.jsonl")]
    assert [m["training/global_step"] for m in records] == [1, 2]
    assert all(m["actor/kl_coef"] == pytest.approx(0.04) and "actor/kl_loss" in m for m in records)
    last = trainer.last_batch
    truths = [rm["ground_truth"] for rm in last.non_tensor_batch["reward_model"]]
    expected = compute_reward({"responses": decoded_responses(trainer, last), "ground_truth": truths})
    assert records[-1]["critic/score/mean"] == pytest.approx(sum(expected) / len(expected), abs=1e-5)


def test_the_issues_one_row_step(tiny_model_dir, toy_data, tmp_path):
    # RLConfig(algorithm, model, n, batch_size) and nothing about micro-batches; a dataset row with its ground truth
    # under extra_info
    row = read_rows(toy_data["train"])[0]
    row["extra_info"]["ground_truth"] = row.pop("reward_model")["ground_truth"]
    seen = []
    trainer = PPOTrainer(config=RLConfig(algorithm="grpo", model=tiny_model_dir, n=4, batch_size=1,
                                         max_response_length=8, output_dir=str(tmp_path)),
                         reward_fn=lambda response, ground_truth: seen.append(ground_truth) or 1.0)
    result = trainer.step([row])
    assert seen == [row["extra_info"]["ground_truth"]] * 4
    assert result.metrics["critic/score/mean"] == 1.0 and float(result) == 0.0  # equal rewards: no advantage


def test_item_2_defaults_that_run(tiny_model_dir, tmp_path, caplog):
    from trainer_helpers import write_rows

    train = write_rows(str(tmp_path / "train.jsonl"), 4)
    with caplog.at_level("WARNING", logger="verl"):
        trainer = PPOTrainer(config=RLConfig(algorithm="grpo", model=tiny_model_dir, train_files=train,
                                             output_dir=str(tmp_path / "ckpt")),
                             reward_fn=digit_fraction)
    cfg = trainer.config
    assert cfg["data.train_batch_size"] == 4  # verl's 1024, clipped to the 4-row training set
    assert cfg["actor_rollout_ref.actor.ppo_mini_batch_size"] == 4  # verl's 256, clipped to the batch
    # verl's defaults: n=1, 512+512 tokens, a 16384-token budget -> 16 sequences fit, the mini-batch has 4
    assert cfg["actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"] == 4
    assert cfg["actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu"] == 4
    assert len(trainer.batch_notes) == len([r for r in caplog.records if r.name == "verl"]) >= 4
    assert any("clipped from 1024" in note for note in trainer.batch_notes)
    result = trainer.step(next(iter(trainer.train_dataloader)))
    assert result.metrics["training/global_step"] == 1 and math.isfinite(float(result))


def test_bad_input_is_a_typed_error(tiny_model_dir, toy_data, tmp_path):
    cfg = RLConfig(algorithm="grpo", model=tiny_model_dir, n=2, batch_size=2, max_response_length=8,
                   output_dir=str(tmp_path))
    trainer = PPOTrainer(config=cfg, reward_fn=digit_fraction)
    with pytest.raises(verl.DataError, match="non-empty list of dataset rows"):
        trainer.step([])
    with pytest.raises(verl.DataError, match=r"step rows:2: row has no 'prompt'"):
        trainer.step([read_rows(toy_data["train"])[0], {"data_source": "toy"}])
    with pytest.raises(verl.ConfigError, match="collect_rollouts: no prompts"):
        trainer.collect_rollouts()
    trajectories = trainer.collect_rollouts(read_rows(toy_data["train"])[:2])
    with pytest.raises(verl.DataError, match="call compute_rewards"):
        trainer.optimize(trajectories)
    with pytest.raises(verl.DataError, match=r"rewards must have shape \(4,\)"):
        trainer.optimize(trajectories, torch.zeros(3))
    actor = verl.models.get_actor_model(tiny_model_dir)
    with pytest.raises(verl.InvalidArgumentError, match="not both"):
        PPOTrainer(config=cfg, model=actor, actor=actor, reward_fn=digit_fraction)
    with pytest.raises(verl.InvalidArgumentError, match="actor must be"):
        PPOTrainer(config=cfg, actor=42, reward_fn=digit_fraction)
    with pytest.raises(verl.ConfigError, match="train_batch_size"):
        PPOTrainer(config=cfg, actor=actor, reward_fn=digit_fraction, rollout_batch_size="eight")
    tok = verl.load_tokenizer(tiny_model_dir)
    with pytest.raises(verl.DataError, match="prompts must be a non-empty list"):
        verl.envs.LanguageModelEnv(tok, actor, prompts="one prompt", reward_fn=digit_fraction)
    with pytest.raises(verl.DataError, match=r"LanguageModelEnv.prompts:2: a prompt must be"):
        verl.envs.LanguageModelEnv(tok, actor, prompts=["ok", 3], reward_fn=digit_fraction)
    with pytest.raises(verl.InvalidArgumentError, match="cannot tell which arguments"):
        verl.envs.LanguageModelEnv(tok, actor, prompts=["ok"], reward_fn=lambda a, b, c, d, e: 0.0)


# -- the tutorials' text as written (issue 40 item 2) --------------------------------------------------------------
# Seed 003's quick_start_gsm8k.py, with MODEL_NAME (a Hub name there) set to the tiny local checkpoint. The row has no
# data_source and its ground truth under extra_info; there is no config= (verl's defaults: GAE with a critic, n=1).
QUICK_START_GSM8K = """
import verl
from verl.trainer import PPOTrainer

actor = verl.models.get_actor_model(model_name=MODEL_NAME, device_map="auto", torch_dtype="auto")

sample_data = {
    "prompt": [{"role": "user", "content": "A baker bakes 40 loaves a day. How many loaves does he bake in 3 days?"}],
    "extra_info": {"ground_truth": "120"},
}

trainer = PPOTrainer(
    actor=actor,
    reward_fn=lambda response: 1.0 if "120" in response else 0.1,
    rollout_batch_size=1,
    num_epochs=1,
)
result = trainer.step([sample_data])
print(f"loss {result:.4f}")
"""

# The same tutorial's second form: a transformers model through HFActor and an async verifier.
QUICK_START_GSM8K_ASYNC = """
import asyncio

import transformers
import verl
from verl.trainer import PPOTrainer

model = transformers.AutoModelForCausalLM.from_pretrained(MODEL_NAME)
tokenizer = transformers.AutoTokenizer.from_pretrained(MODEL_NAME)
actor = verl.models.HFActor(model)

sample_data = {
    "prompt": [{"role": "user", "content": "A baker bakes 40 loaves a day. How many loaves does he bake in 3 days?"}],
    "extra_info": {"ground_truth": "120"},
}

async def execute_and_verify(response):
    await asyncio.sleep(0)  # a sandbox or verifier call
    return 1.0 if "120" in response else len(response) / 100

trainer = PPOTrainer(actor=actor, tokenizer=tokenizer, reward_fn=execute_and_verify, rollout_batch_size=1,
                     num_epochs=1)
result = trainer.step([sample_data])
print(f"loss {result:.4f}")
"""


def run_snippet(source: str, model_dir: str, namespace: dict | None = None) -> dict:
    """Runs a tutorial's text with MODEL_NAME (and what ``namespace`` holds) defined; its variables afterwards."""
    namespace = namespace if namespace is not None else {}
    namespace["MODEL_NAME"] = model_dir
    exec(compile(source, "<tutorial>", "exec"), namespace)  # noqa: S102 -- the tutorial's own text, verbatim
    return namespace


def test_verbatim_quick_start_gsm8k_row_without_data_source(tiny_model_dir, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # verl's default output directories land here
    ns = run_snippet(QUICK_START_GSM8K, tiny_model_dir)
    trainer, result = ns["trainer"], ns["result"]
    assert result.metrics["training/global_step"] == 1 and math.isfinite(float(result))
    # the lambda's rewards on the decoded responses reach the metrics (0.1 unless "120" was sampled)
    responses = decoded_responses(trainer, trainer.last_batch)
    expected = [1.0 if "120" in r else 0.1 for r in responses]
    assert result.metrics["critic/score/mean"] == pytest.approx(sum(expected) / len(expected), abs=1e-6)
    assert "data_source" not in trainer.last_batch.non_tensor_batch  # scored without one
    # verl's defaults with no config: GAE, so a critic was trained
    assert trainer.config["algorithm.adv_estimator"] == "gae" and "critic/vf_loss" in result.metrics


def test_verbatim_quick_start_gsm8k_hf_actor_and_async_reward(tiny_model_dir, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ns = run_snippet(QUICK_START_GSM8K_ASYNC, tiny_model_dir)
    trainer, result = ns["trainer"], ns["result"]
    assert result.metrics["training/global_step"] == 1 and math.isfinite(float(result))
    responses = decoded_responses(trainer, trainer.last_batch)
    expected = [1.0 if "120" in r else len(r) / 100 for r in responses]
    assert result.metrics["critic/score/mean"] == pytest.approx(sum(expected) / len(expected), abs=1e-6)


# Seed 000: the RLConfig of its text, a trainer on the model, one step on a batch of the dataset.
SEED_000 = """
import verl
from verl import PPOTrainer, RLConfig

config = RLConfig(algorithm="ppo", batch_size=32, learning_rate=5e-5, clip_epsilon=0.2)
trainer = PPOTrainer(config=config, model=MODEL_NAME, reward_fn=reward_fn)
for batch in verl.data.get_dataloader(TRAIN_FILE, batch_size=32):
    metrics = trainer.step(batch)
    print(f"policy loss {metrics:.4f}")
"""


def test_verbatim_seed_000_ppo_trains_a_critic_with_gae(tiny_model_dir, tmp_path, monkeypatch):
    from trainer_helpers import write_rows

    monkeypatch.chdir(tmp_path)
    train = write_rows(str(tmp_path / "train.jsonl"), 32)
    critic_before = {}
    ns: dict = {"TRAIN_FILE": train}

    def reward_fn(response, ground_truth):
        if not critic_before:  # the first scoring: the critic as the trainer built it, before any update
            critic = ns["trainer"]._trainer.critic_model
            critic_before.update({k: v.clone() for k, v in critic.state_dict().items()})
        return digit_fraction(response) + float(ground_truth in response)

    ns["reward_fn"] = reward_fn
    run_snippet(SEED_000, tiny_model_dir, ns)
    trainer, metrics, config = ns["trainer"], ns["metrics"], ns["config"]
    # "ppo" is PPO with a critic: verl's GAE estimator, in the RLConfig and in the trainer's resolved config
    assert config.to_config()["algorithm.adv_estimator"] == "gae"
    assert trainer.config["algorithm.adv_estimator"] == "gae" and trainer._trainer.settings["use_critic"] is True
    actor = "actor_rollout_ref.actor"
    assert trainer.config[f"{actor}.optim.lr"] == 5e-5 and trainer.config["data.train_batch_size"] == 32
    assert (trainer.config[f"{actor}.clip_ratio_low"], trainer.config[f"{actor}.clip_ratio_high"]) == (0.2, 0.2)
    # one step of 32 prompts; the critic was trained: its metrics are there and its weights moved
    assert trainer.global_steps == 1 and metrics.metrics["training/global_step"] == 1
    for key in ("critic/vf_loss", "critic/values/mean", "critic/returns/mean", "critic/vf_explained_var"):
        assert key in metrics.metrics and math.isfinite(metrics.metrics[key]), key
    critic_after = trainer._trainer.critic_model.state_dict()
    assert critic_before and any(not torch.equal(v, critic_after[k]) for k, v in critic_before.items())
    last = trainer.last_batch
    truths = [rm["ground_truth"] for rm in last.non_tensor_batch["reward_model"]]
    expected = torch.tensor([digit_fraction(r) + float(g in r) for r, g in zip(decoded_responses(trainer, last),
                                                                                truths)])
    assert metrics.metrics["critic/score/mean"] == pytest.approx(expected.mean().item(), abs=1e-6)
    # GAE's returns (the critic's targets): with verl's gamma = lam = 1 and no KL in the reward, every response
    # token's return is its sample's reward
    mask = last.batch["response_mask"].bool()
    returns = last.batch["returns"]
    assert torch.allclose(returns[mask], expected.unsqueeze(1).expand_as(returns)[mask], atol=1e-5)


@pytest.mark.parametrize("name, estimator", [("ppo", "gae"), ("PPO", "gae"), ("reinforce++", "reinforce_plus_plus"),
                                             ("grpo_vectorized", "grpo_vectorized")])
def test_rlconfig_and_tutorial_yaml_share_the_algorithm_names(name, estimator):
    assert RLConfig(algorithm=name).to_config()["algorithm.adv_estimator"] == estimator
    assert RLConfig({"algorithm": {"name": name}}).to_config()["algorithm.adv_estimator"] == estimator


def test_an_unknown_algorithm_name_is_refused_by_the_trainer(tiny_model_dir):
    # names outside the tutorials' table go to verl's key as they are; the trainer checks them against the registry
    with pytest.raises(verl.ConfigError, match=r"algorithm.adv_estimator: Unknown advantage estimator 'sac'; "
                                               r"registered: .*gae.*grpo"):
        PPOTrainer(config=RLConfig(algorithm="sac", model=tiny_model_dir), reward_fn=digit_fraction)


def test_row_without_data_source_and_no_reward_fn_names_data_source(tiny_model_dir, tmp_path, monkeypatch):
    # verl's default_compute_score chooses its scorer by data_source: without one (and no reward_fn) the step fails
    # saying so, before any update
    monkeypatch.chdir(tmp_path)
    trainer = PPOTrainer(config=RLConfig(algorithm="grpo", model=tiny_model_dir, n=2, batch_size=1,
                                         max_response_length=8, output_dir=str(tmp_path)))
    row = {"prompt": [{"role": "user", "content": "Compute 2+3."}], "extra_info": {"ground_truth": "5"}}
    with pytest.raises(verl.DataError, match=r"no 'data_source' field .* default_compute_score, which chooses its "
                                             r"scorer by data_source .* pass reward_fn="):
        trainer.step([row])
    assert trainer.global_steps == 0
    # the same row with verl's data source for GSM8K is scored by default_compute_score
    result = trainer.step([{**row, "data_source": "openai/gsm8k"}])
    assert result.metrics["training/global_step"] == 1
    expected = [gsm8k.compute_score(r, "5") for r in decoded_responses(trainer, trainer.last_batch)]
    assert result.metrics["critic/score/mean"] == pytest.approx(sum(expected) / len(expected))
