"""verl's ``verl.experimental`` namespace: the agent loop (``verl.experimental.agent_loop``)."""
