"""verl's workers on the C++ core: the actor (and reference) policy and the critic; the reward
managers live in ``verl.workers.reward_manager``.

``ActorWorker`` / ``CriticWorker`` take a ``verl.DataProto`` and return one (log-probs, values) or a
metrics dict (updates), with verl 0.9.1's config keys, loss scaling and metric names. The model is
a ``verl.models.transformer.CausalLM`` / ``ValueModel``; the worker shares its C++ module (updates
change the caller's model in place).
"""

from .actor import ActorWorker
from .critic import CriticWorker

__all__ = ["ActorWorker", "CriticWorker"]
