#!/usr/bin/env bash
# GRPO on GSM8K with Qwen2.5-0.5B-Instruct on one GPU: verl's recipe (examples/grpo_trainer/run_qwen*.sh)
# with verl's config keys, through verl-cpp's `python -m verl.trainer.main_ppo`. See README.md.
#
#   DATA_DIR    train.parquet / test.parquet from preprocess.py   (default ~/data/gsm8k)
#   MODEL_PATH  local Hugging Face checkpoint directory           (default ~/models/Qwen2.5-0.5B-Instruct)
#   PYTHON      the interpreter with verl-cpp installed           (default python3)
# Extra arguments are verl overrides applied last, e.g. `trainer.total_epochs=1 trainer.logger=[console,tensorboard]`.
#
# tests/python/examples/test_gsm8k_example.py runs this very script on CPU with a tiny random model
# (sizes overridden, algorithm keys as here), so keep every override on its own `key=value \` line.
set -euo pipefail

DATA_DIR=${DATA_DIR:-$HOME/data/gsm8k}
MODEL_PATH=${MODEL_PATH:-$HOME/models/Qwen2.5-0.5B-Instruct}
PYTHON=${PYTHON:-python3}

set -x
"$PYTHON" -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    algorithm.use_kl_in_reward=False \
    data.train_files="$DATA_DIR/train.parquet" \
    data.val_files="$DATA_DIR/test.parquet" \
    data.train_batch_size=128 \
    data.max_prompt_length=512 \
    data.max_response_length=1024 \
    data.filter_overlong_prompts=True \
    data.truncation=error \
    actor_rollout_ref.model.path="$MODEL_PATH" \
    actor_rollout_ref.model.enable_gradient_checkpointing=True \
    actor_rollout_ref.model.use_remove_padding=True \
    actor_rollout_ref.actor.optim.lr=1e-6 \
    actor_rollout_ref.actor.ppo_mini_batch_size=32 \
    actor_rollout_ref.actor.use_dynamic_bsz=True \
    actor_rollout_ref.actor.ppo_max_token_len_per_gpu=8192 \
    actor_rollout_ref.actor.use_kl_loss=True \
    actor_rollout_ref.actor.kl_loss_coef=0.001 \
    actor_rollout_ref.actor.kl_loss_type=low_var_kl \
    actor_rollout_ref.actor.entropy_coeff=0 \
    actor_rollout_ref.actor.loss_agg_mode=token-mean \
    actor_rollout_ref.rollout.name=native \
    actor_rollout_ref.rollout.n=5 \
    actor_rollout_ref.rollout.temperature=1.0 \
    trainer.device=cuda \
    trainer.n_gpus_per_node=1 \
    trainer.nnodes=1 \
    trainer.critic_warmup=0 \
    trainer.logger='[console]' \
    trainer.project_name=verl_grpo_example_gsm8k \
    trainer.experiment_name=qwen2.5_0.5b_grpo \
    trainer.val_before_train=True \
    trainer.test_freq=10 \
    trainer.save_freq=50 \
    trainer.total_epochs=15 \
    "$@"
