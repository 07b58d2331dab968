"""verl's one-step off-policy trainer (``verl.experimental.one_step_off_policy``): generation of batch N+1 overlaps the
update on batch N. ``python -m verl.experimental.one_step_off_policy.main_ppo actor_rollout_ref.hybrid_engine=False
...`` runs it; ``verl.PPOTrainer`` runs the same loop whenever ``actor_rollout_ref.hybrid_engine`` is false."""
