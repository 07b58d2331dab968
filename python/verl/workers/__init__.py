"""verl's workers (``verl.workers``): the reward managers live in ``verl.workers.reward_manager``."""
