"""fsm_agent: an LLM agent loop run as an explicit finite-state machine with replayable traces."""

__version__ = "0.1.0"
