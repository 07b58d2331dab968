"""verl's workers on the C++ core: the actor (and reference) policy, the critic and the reward model.

``ActorWorker`` / ``CriticWorker`` take a ``verl.DataProto`` and return one (log-probs, values) or a
metrics dict (updates), with verl 0.9.1's config keys, loss scaling and metric names. The model is
a ``verl.models.transformer.CausalLM`` / ``ValueModel``; the worker shares its C++ module (updates
change the caller's model in place). ``RewardModelWorker.compute_rm_score`` scores (prompt, response) with a
sequence-classification checkpoint into ``rm_scores``. The reward managers live in ``verl.workers.reward_manager``.
"""

from .actor import ActorWorker
from .critic import CriticWorker
from .reward_model import RewardModelWorker

__all__ = ["ActorWorker", "CriticWorker", "RewardModelWorker"]
