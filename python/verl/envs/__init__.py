"""Environments a trainer collects rollouts in (``PPOTrainer(config=..., env=env)``): ``LanguageModelEnv``, a
prompt set, a policy and a reward function."""

from .language_model_env import LanguageModelEnv

__all__ = ["LanguageModelEnv"]
