"""Contract tests: each port's promises, run over every implementation registered for it."""
