"""What fsm_agent ships for testing agents built on it (as structlog ships ``testing``).

Modules: ``scenario`` (the scripted-model format and ``ScriptedModel``), ``fake_server`` (a
local Anthropic API speaking the real SSE wire format, on 127.0.0.1), ``world`` (drive a core
synchronously against scripted tools, hooks and permissions), ``strategies`` and
``transcripts`` (Hypothesis strategies), ``shell_disguises`` (shell text hiding a command,
for testing permission rules), ``invariants`` (the DESIGN §6 checks), ``catalogue``
(the scripted runs behind the golden traces) and ``pytest_plugin`` (``--fsm-replay``).
"""
