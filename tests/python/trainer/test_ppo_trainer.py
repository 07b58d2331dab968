"""verl.PPOTrainer end to end on a tiny random Qwen2 with the arith demo's real BPE tokenizer: short runs for
every advantage estimator family (metrics finite, verl's keys), DAPO, determinism, learning on a toy reward,
validation metrics, and bad input (reward raising / NaN, unknown config key)."""

from __future__ import annotations

import math
import os

import pytest
import torch

import verl
from verl import PPOTrainer, RLConfig
from verl.utils.tracking import read_metrics

from trainer_helpers import toy_overrides

COMMON_KEYS = [
    "timing_s/gen", "timing_s/reward", "timing_s/old_log_prob", "timing_s/adv", "timing_s/update_actor",
    "timing_s/update_weights", "timing_s/step", "actor/entropy", "actor/pg_loss", "actor/pg_clipfrac", "actor/ppo_kl",
    "actor/grad_norm", "actor/lr", "critic/score/mean", "critic/score/max", "critic/score/min", "critic/rewards/mean",
    "critic/rewards/max", "critic/rewards/min", "critic/advantages/mean", "critic/advantages/max",
    "critic/advantages/min", "critic/returns/mean", "critic/returns/max", "critic/returns/min",
    "response_length/mean", "response_length/max", "response_length/min", "response_length/clip_ratio",
    "prompt_length/mean", "prompt_length/max", "prompt_length/min", "prompt_length/clip_ratio",
    "perf/total_num_tokens", "perf/time_per_step", "perf/throughput", "perf/mfu/actor", "perf/mfu/actor_infer",
    "training/global_step", "training/epoch",
]


def wall_clock_dependent(key: str) -> bool:
    """Metrics that measure time (and so differ between identical runs): timings, throughput, MFU."""
    return key.startswith(("timing_s/", "timing_per_token_ms/", "perf/mfu/")) or key in (
        "perf/time_per_step", "perf/throughput")


def same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def digit_fraction(response: str) -> float:
    """The toy task: the share of the response's characters that are digits."""
    return sum(c.isdigit() for c in response) / max(len(response), 1)


def run_steps(tiny_model_dir, toy_data, tmp_path, estimator="grpo", steps=2, extra=(), reward_fn=digit_fraction):
    cfg = RLConfig(overrides=[*toy_overrides(tiny_model_dir, str(tmp_path), estimator, max(steps, 1)), *extra])
    trainer = PPOTrainer(config=cfg, reward_fn=reward_fn, train_dataset=toy_data["train"])
    from verl.utils.dataset import create_rl_dataloader

    loader = create_rl_dataloader(trainer.train_dataset, trainer.config.data, train=True)
    out = []
    for i, batch in enumerate(loader):
        if i == steps:
            break
        out.append(trainer.step(batch))
    return trainer, out


def check_metrics(metrics, extra_keys=()):
    for key in [*COMMON_KEYS, *extra_keys]:
        assert key in metrics, key
        assert math.isfinite(metrics[key]), (key, metrics[key])
    # verl's model FLOPs utilisation against this machine's measured matmul peak: a fraction in (0, 1]
    for key in (k for k in metrics if k.startswith("perf/mfu/")):
        assert 0.0 < metrics[key] <= 1.0, (key, metrics[key])


@pytest.mark.parametrize("estimator", ["grpo", "rloo", "reinforce_plus_plus", "remax"])
def test_outcome_estimators_run(estimator, tiny_model_dir, toy_data, tmp_path):
    trainer, metrics = run_steps(tiny_model_dir, toy_data, tmp_path, estimator)
    assert [m["training/global_step"] for m in metrics] == [1, 2]
    for m in metrics:
        check_metrics(m)
        assert "critic/values/mean" not in m and "perf/mfu/critic" not in m
        # the rollout engine generates with the trained module itself: its log-probs are the actor's
        assert m["training/rollout_probs_diff_max"] < 1e-4
    assert trainer.global_steps == 2
    if estimator == "remax":
        assert "reward_baselines" in trainer.last_batch.batch


def test_gae_with_critic_and_kl(tiny_model_dir, toy_data, tmp_path):
    trainer, metrics = run_steps(tiny_model_dir, toy_data, tmp_path, "gae",
                                 extra=["actor_rollout_ref.actor.use_kl_loss=true", "algorithm.use_kl_in_reward=true"])
    for m in metrics:
        check_metrics(m, ["critic/values/mean", "critic/values/max", "critic/values/min", "critic/vf_loss",
                          "critic/vf_explained_var", "timing_s/values", "timing_s/update_critic", "timing_s/ref",
                          "actor/kl_loss", "actor/reward_kl_penalty", "perf/mfu/critic"])


def test_dapo_configuration(tiny_model_dir, toy_data, tmp_path):
    scorer = tmp_path / "score.py"
    scorer.write_text("def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n"
                      "    return {'score': float(solution_str.strip() == ground_truth), 'acc': 1.0}\n")
    trainer, metrics = run_steps(
        tiny_model_dir, toy_data, tmp_path, "grpo", reward_fn=None,
        extra=["actor_rollout_ref.actor.clip_ratio_low=0.2", "actor_rollout_ref.actor.clip_ratio_high=0.28",
               "actor_rollout_ref.actor.loss_agg_mode=token-mean", "reward.reward_manager.name=dapo",
               f"reward.custom_reward_function.path={scorer}",
               "+reward.reward_kwargs={overlong_buffer_cfg: {enable: true, len: 4, penalty_factor: 1.0}}"])
    for m in metrics:
        check_metrics(m, ["actor/pg_clipfrac_lower"])
    # the overlong buffer's penalty reaches the scores: -(length - (8 - 4)) / 4 beyond 4 tokens
    batch = trainer.last_batch
    lengths = batch.batch["response_mask"].sum(-1)
    scores = batch.batch["token_level_scores"].sum(-1)
    # (the random model never answers right, so the score is 0 minus the penalty)
    assert (lengths > 4).any()
    penalty = ((lengths - 4).clamp(min=0) / 4.0).to(scores.dtype)
    assert torch.allclose(scores, -penalty)


def test_deterministic_for_a_seed(tiny_model_dir, toy_data, tmp_path):
    def run():
        return run_steps(tiny_model_dir, toy_data, tmp_path, "grpo")[1]

    a, b = run(), run()
    for ma, mb in zip(a, b):
        assert ma.keys() == mb.keys()
        for key in ma:
            if wall_clock_dependent(key):
                continue
            assert same(ma[key], mb[key]), (key, ma[key], mb[key])


def test_learns_the_toy_reward(tiny_model_dir, toy_data, tmp_path):
    """Fixed seed: GRPO raises the mean digit fraction (about 0.02 at the start: 10 digit tokens of 304) by at
    least 0.2 within 8 steps (measured: 0.02 -> 0.46)."""
    steps = 8
    cfg = RLConfig(overrides=[*toy_overrides(tiny_model_dir, str(tmp_path), "grpo", steps),
                              "actor_rollout_ref.actor.optim.lr=0.03", "trainer.total_epochs=4"])
    trainer = PPOTrainer(config=cfg, reward_fn=digit_fraction, train_dataset=toy_data["train"])
    from verl.utils.dataset import create_rl_dataloader

    loader = create_rl_dataloader(trainer.train_dataset, trainer.config.data, train=True)
    rewards = []
    while len(rewards) < steps:
        for batch in loader:
            rewards.append(trainer.step(batch)["critic/score/mean"])
            if len(rewards) == steps:
                break
    first, last = sum(rewards[:2]) / 2, sum(rewards[-2:]) / 2
    assert last - first >= 0.2, rewards


def test_fit_validation_and_metrics_file(tiny_model_dir, toy_data, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = RLConfig(overrides=[*toy_overrides(tiny_model_dir, str(tmp_path), "grpo", 3),
                              f"data.train_files={toy_data['train']}", f"data.val_files={toy_data['test']}",
                              "trainer.val_before_train=true", "trainer.test_freq=2",
                              "actor_rollout_ref.rollout.val_kwargs.n=2"])
    trainer = PPOTrainer(config=cfg, reward_fn=lambda response, ground_truth: float(response.strip() == ground_truth))
    final = trainer.fit()
    assert "val-core/toy/reward/mean@2" in final
    records = read_metrics(tmp_path / "proj" / "exp.jsonl")
    steps = [step for step, _ in records]
    data = [d for _, d in records]
    assert steps == [0, 1, 2, 3]  # validation before training, then three steps
    assert "val-core/toy/reward/mean@2" in data[0]
    assert "val-core/toy/reward/mean@2" in data[2] and "val-core/toy/reward/mean@2" in data[3]
    assert data[1]["training/global_step"] == 1


def test_stage_methods_compose_to_a_step(tiny_model_dir, toy_data, tmp_path):
    trainer, _ = run_steps(tiny_model_dir, toy_data, tmp_path, "grpo", steps=0)
    rows = [trainer.train_dataset[i] for i in range(4)]
    rollouts = trainer.collect_rollouts(rows)
    assert len(rollouts) == 16 and "responses" in rollouts.batch and "uid" in rollouts.non_tensor_batch
    rewards = trainer.compute_rewards(rollouts)  # one per trajectory; the token-level scores go into rollouts
    assert rewards.shape == (16,)
    assert torch.equal(rollouts.batch["token_level_scores"].sum(-1), rewards)
    metrics = trainer.optimize(rollouts)
    check_metrics(metrics)
    assert trainer.global_steps == 1


def test_reward_function_raising_names_the_sample(tiny_model_dir, toy_data, tmp_path):
    def bad(response):
        raise KeyError("no such key")

    with pytest.raises(verl.RewardError, match=r"sample 0 \(data_source='toy'"):
        run_steps(tiny_model_dir, toy_data, tmp_path, "grpo", steps=1, reward_fn=bad)


def test_nan_reward_is_an_error(tiny_model_dir, toy_data, tmp_path):
    with pytest.raises(verl.RewardError, match="non-finite"):
        run_steps(tiny_model_dir, toy_data, tmp_path, "grpo", steps=1, reward_fn=lambda response: float("nan"))


def test_unknown_config_key(tiny_model_dir, tmp_path):
    with pytest.raises(verl.ConfigError, match="ppo_mini_batch_size"):
        PPOTrainer(config=RLConfig(overrides=[*toy_overrides(tiny_model_dir, str(tmp_path)),
                                              "actor_rollout_ref.actor.ppo_mini_batch_sise=2"]),
                   reward_fn=digit_fraction)


def _fit(tiny_model_dir, toy_data, out_dir, steps, extra=()):
    cfg = RLConfig(overrides=[*toy_overrides(tiny_model_dir, str(out_dir), "gae", steps),
                              f"data.train_files={toy_data['train']}", "trainer.total_epochs=2",
                              "data.shuffle=true", "data.seed=5", *extra])
    trainer = PPOTrainer(config=cfg, reward_fn=digit_fraction)
    trainer.fit()
    return trainer


def test_resume_continues_exactly(tiny_model_dir, toy_data, tmp_path, monkeypatch):
    """4 steps straight == 2 steps, checkpoint, a new process-like trainer resuming, 2 more steps (gae: actor and
    critic weights, both optimizers, the shuffled dataloader position)."""
    monkeypatch.chdir(tmp_path)
    straight = _fit(tiny_model_dir, toy_data, tmp_path / "a", 4, ["trainer.experiment_name=a"])
    first = _fit(tiny_model_dir, toy_data, tmp_path / "b", 2, ["trainer.experiment_name=b", "trainer.save_freq=2"])
    ckpt = tmp_path / "b" / "ckpt"
    assert (ckpt / "latest_checkpointed_iteration.txt").read_text() == "2"
    for part in ("actor", "critic"):
        assert (ckpt / "global_step_2" / part / "config.json").exists()
        assert (ckpt / "global_step_2" / part / "optim.pt").exists()
    assert first.global_steps == 2
    resumed = _fit(tiny_model_dir, toy_data, tmp_path / "b", 4, ["trainer.experiment_name=b"])
    assert resumed.global_steps == 4

    def records(name):
        return dict(read_metrics(tmp_path / "proj" / f"{name}.jsonl"))

    a, b = records("a"), records("b")
    assert sorted(b) == [1, 2, 3, 4]
    for step in (1, 2, 3, 4):
        for key, value in a[step].items():
            if wall_clock_dependent(key):
                continue
            assert same(b[step][key], value), (step, key, b[step][key], value)
    for got, want in ((resumed._trainer.actor_model, straight._trainer.actor_model),
                      (resumed._trainer.critic_model, straight._trainer.critic_model)):
        want_state = want.state_dict()
        for name, tensor in got.state_dict().items():
            assert torch.equal(tensor, want_state[name]), name


def test_dapo_dynamic_sampling_filters_constant_groups(tiny_model_dir, toy_data, tmp_path, monkeypatch):
    """Prompts with an even answer always score 1 (zero variance: filtered out), so a step needs more than one
    generation batch to gather data.train_batch_size prompts with varying rewards."""
    monkeypatch.chdir(tmp_path)

    def reward(response, ground_truth):
        return 1.0 if int(ground_truth) % 2 == 0 else digit_fraction(response)

    cfg = RLConfig(overrides=[*toy_overrides(tiny_model_dir, str(tmp_path), "grpo", 2),
                              f"data.train_files={toy_data['train']}", "trainer.total_epochs=3",
                              "algorithm.filter_groups.enable=true", "algorithm.filter_groups.metric=seq_reward",
                              "trainer.logger=[console]"])
    trainer = PPOTrainer(config=cfg, reward_fn=reward)
    trainer.fit()
    records = [data for _, data in read_metrics(tmp_path / "proj" / "exp.jsonl")]
    assert len(records) == 2
    for data in records:
        assert data["train/num_gen_batches"] >= 2
        check_metrics(data)
    # only groups with varying rewards were trained on: every kept uid's scores differ
    batch = trainer.last_batch
    assert len(batch) == 16
    scores = batch.batch["token_level_scores"].sum(-1).tolist()
    groups = {}
    for uid, score in zip(batch.non_tensor_batch["uid"].tolist(), scores):
        groups.setdefault(uid, []).append(score)
    assert all(max(v) > min(v) for v in groups.values())

    strict = RLConfig(overrides=[*toy_overrides(tiny_model_dir, str(tmp_path), "grpo", 2),
                                 f"data.train_files={toy_data['train']}", "algorithm.filter_groups.enable=true",
                                 "algorithm.filter_groups.metric=seq_reward",
                                 "algorithm.filter_groups.max_num_gen_batches=1"])
    with pytest.raises(verl.DataError, match="max_num_gen_batches"):
        PPOTrainer(config=strict, reward_fn=lambda response: 0.0).fit()


def test_crash_during_checkpoint_keeps_the_previous_one(tiny_model_dir, toy_data, tmp_path, monkeypatch):
    trainer, _ = run_steps(tiny_model_dir, toy_data, tmp_path, "grpo", steps=1)
    first = trainer.save_checkpoint()
    root = os.path.dirname(first)
    assert os.path.basename(first) == "global_step_1"
    trainer.step([trainer.train_dataset[i] for i in range(4, 8)])

    real_write = PPOTrainer._write_model

    def crash(self, module, directory, tokenizer_dir):
        real_write(self, module, directory, tokenizer_dir)  # a partial checkpoint is on disk ...
        raise KeyboardInterrupt("killed mid-save")          # ... when the process dies

    monkeypatch.setattr(PPOTrainer, "_write_model", crash)
    with pytest.raises(KeyboardInterrupt):
        trainer.save_checkpoint()
    monkeypatch.undo()
    with open(os.path.join(root, "latest_checkpointed_iteration.txt")) as f:
        assert f.read() == "1"
    assert sorted(os.listdir(root)) == ["global_step_1", "latest_checkpointed_iteration.txt"]
    # the previous checkpoint loads: a fresh trainer resumes at step 1 with its weights
    fresh, _ = run_steps(tiny_model_dir, toy_data, tmp_path, "grpo", steps=0)
    fresh.load_checkpoint(first)
    assert fresh.global_steps == 1
    from verl.models import safetensors

    saved = safetensors.load_checkpoint_dir(os.path.join(first, "actor"))
    for name, tensor in fresh._trainer.actor_model.state_dict().items():
        assert torch.equal(tensor, saved[name]), name


def test_hand_over_to_an_engine_on_another_module(tiny_model_dir, toy_data, tmp_path):
    """With the rollout engine on a separate module (a remote / resharded rollout), each step copies the updated
    weights into it by name; its log-probs equal the actor's recomputation before the update."""
    from verl import _C
    from verl.models.transformer import CausalLM

    from verl.models import safetensors

    def load():
        model = CausalLM(tiny_model_dir)
        model.load_state_dict(safetensors.load_checkpoint_dir(tiny_model_dir))
        return model

    actor, replica = load(), load()
    engine = _C.rollout.Engine(replica._module, max_num_seqs=64)
    cfg = RLConfig(overrides=toy_overrides(tiny_model_dir, str(tmp_path), "grpo", 1)).to_config()

    def reward(cpp_batch):
        responses = cpp_batch.batch["responses"]
        return torch.rand(responses.shape, generator=torch.Generator().manual_seed(0)), {}

    trainer = _C.trainer.PPOTrainer(cfg.cpp, actor._module, reward, engine=engine, pad_token_id=0)
    assert trainer.engine is engine
    trainer_py, _ = run_steps(tiny_model_dir, toy_data, tmp_path, "grpo", steps=0)
    rows = [trainer_py.train_dataset[i] for i in range(4)]
    from verl.utils.dataset import collate_to_dataproto

    metrics = trainer.step(collate_to_dataproto(rows).to_cpp())
    assert metrics["training/rollout_probs_diff_max"] < 1e-4
    want = actor.state_dict()
    changed = False
    for name, tensor in replica.state_dict().items():
        assert torch.equal(tensor, want[name]), name
        changed |= not torch.equal(tensor, load().state_dict()[name])
    assert changed  # the update reached the replica
