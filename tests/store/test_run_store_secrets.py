"""No row of the run store holds a secret, in SQLite or PostgreSQL (DESIGN §8).

A run plants a configured secret and an API-key-shaped string where they reach the columns the
store keeps: the name of a tool the model made up, the input of a call, and an allow rule the
user wrote with a credential in it (the permission decision names the rule). The store is built
from the trace, which is redacted, so every table holds ``[REDACTED]`` there instead.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fsm_agent.core.config import LoopConfig
from fsm_agent.runtime.agent import Agent
from fsm_agent.runtime.permissions import PermissionPolicy
from fsm_agent.store.opening import open_store
from fsm_agent.store.recording import index_run
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario
from fsm_agent.toolbox import Bash

SECRET = "configured-hunter2-secret"
KEY_SHAPED = "sk-ant-api03-PLANTED0123456789abcdef"
COMMAND = f"touch {SECRET}-{KEY_SHAPED}.txt"
TABLES = ("runs", "run_transitions", "tool_calls", "permission_decisions")


def planted_trace(tmp_path: Path) -> Path:
    """A finished run whose trace had secrets to redact in the store's columns."""
    uses: list[dict[str, Any]] = [
        {"tool_use": {"name": "Bash", "input": {"command": COMMAND}}},
        {"tool_use": {"name": f"{SECRET}-{KEY_SHAPED}", "input": {"x": COMMAND}}},
    ]
    model = ScriptedModel(
        parse_scenario({"steps": [{"content": uses}, {"content": [{"text": COMMAND}]}]})
    )
    trace = tmp_path / "traces" / "run.jsonl"
    agent = Agent(
        model=model,
        tools=[Bash()],
        config=LoopConfig(model="scripted-model"),
        permissions=PermissionPolicy(allow=(f"Bash({COMMAND})",)),
        cwd=tmp_path,
        trace=trace,
        store=False,
        secrets=[SECRET],
    )
    assert agent.run_sync("go").terminal == "completed"
    return trace


def test_no_table_of_the_store_holds_a_secret(store_url: str, tmp_path: Path) -> None:
    assert index_run(planted_trace(tmp_path), store_url)
    store = open_store(store_url)
    try:
        with store.transaction() as cursor:
            rows = {}
            for table in TABLES:
                cursor.execute(f"SELECT * FROM {table}")
                rows[table] = cursor.fetchall()
    finally:
        store.close()
    text = repr(rows)
    assert rows["permission_decisions"], "the allow rule decided the Bash call"
    assert "[REDACTED]" in repr(rows["permission_decisions"])
    assert SECRET not in text
    assert KEY_SHAPED not in text
