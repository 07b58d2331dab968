"""verl's PPO-family algorithms (``verl.trainer.ppo.core_algos``)."""
