"""verl's trainer entry points: ``python -m verl.trainer.main_ppo`` (config keys as in verl)."""
