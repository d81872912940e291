"""No row of the run store holds a secret, in SQLite or PostgreSQL (DESIGN §8).

A run plants a configured secret and an API-key-shaped string where they reach the columns the
store keeps: the name of a tool the model made up, the input of a call, and an allow rule the
user wrote with a credential in it (the permission decision names the rule). The store is built
from the trace, which is redacted, so every table holds ``[REDACTED]`` there instead.

A trace written by another program (``fsm-agent runs import`` takes any folder) is redacted as
it is read: the same strings, a value under a credential's name and the store URL's password,
written in clear in such a trace, reach no table either.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from fsm_agent.cli import main
from fsm_agent.core.config import LoopConfig
from fsm_agent.runtime.agent import Agent
from fsm_agent.runtime.permissions import PermissionPolicy
from fsm_agent.store.background import wait_for_store_writes
from fsm_agent.store.opening import open_store
from fsm_agent.store.postgres import PostgresRunStore
from fsm_agent.store.recording import import_traces, index_run
from fsm_agent.store.summary import summarize_trace
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario
from fsm_agent.toolbox import Bash
from fsm_agent.trace.redact import REDACTED, Redactor, mask

SECRET = "configured-hunter2-secret"
KEY_SHAPED = "sk-ant-api03-PLANTED0123456789abcdef"
COMMAND = f"touch {SECRET}-{KEY_SHAPED}.txt"
GOLDEN = Path(__file__).parents[2] / "traces"
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


def stored_rows(store_url: str) -> dict[str, list[Any]]:
    """Every row of every table of the store at ``store_url``."""
    store = open_store(store_url)
    try:
        with store.transaction() as cursor:
            rows = {}
            for table in TABLES:
                cursor.execute(f"SELECT * FROM {table}")
                rows[table] = cursor.fetchall()
    finally:
        store.close()
    return rows


def test_no_table_of_the_store_holds_a_secret(store_url: str, tmp_path: Path) -> None:
    assert index_run(planted_trace(tmp_path), store_url)
    rows = stored_rows(store_url)
    text = repr(rows)
    assert rows["permission_decisions"], "the allow rule decided the Bash call"
    assert "[REDACTED]" in repr(rows["permission_decisions"])
    assert SECRET not in text
    assert KEY_SHAPED not in text


MODEL_KEY = "foreign-model-key-0123"
"""Under a credential's name in a foreign trace, neither configured nor shaped like a key."""
ACCENTED = "configured-sécret-0123"
"""A configured secret another writer escapes (``\u00e9``) where ours would not."""


def foreign_trace(trace: Path, *planted: str) -> Path:
    """A trace another program wrote (Python's ``json``, ASCII only) at ``trace``, with
    ``planted`` in clear in every field the store keeps: the model, a tool's name, a
    transition's name and the rule of a permission decision. Its run id is the file's stem."""
    text = " ".join(planted)
    records: list[dict[str, Any]] = [
        {
            "record": "header",
            "meta": {"model": {"name": text, "api_key": MODEL_KEY}},
        },
        {"record": "effect", "effect": {"type": "RunToolStep", "call_id": "c1", "tool_name": text}},
        {
            "record": "effect",
            "effect": {"type": "AskPermission", "effect_id": "e1", "call_id": "c1"},
        },
        {
            "record": "event",
            "event": {
                "type": "PermissionDecided",
                "effect_id": "e1",
                "behavior": "allow",
                "source": "rule",
                "rule": f"Bash(curl {text})",
                "rule_source": f"settings {text}",
            },
        },
        {"record": "transition", "name": text, "machine": "tool", "call_id": "c1", "dest": text},
        {"record": "end", "terminal": "completed", "usage": {"input_tokens": 1}},
    ]
    trace.parent.mkdir(parents=True, exist_ok=True)
    trace.write_text("".join(json.dumps(record) + "\n" for record in records), "ascii")
    return trace


def test_an_imported_foreign_trace_leaves_no_secret_in_the_store(
    store_url: str, tmp_path: Path
) -> None:
    """Every rule the trace writer applies is applied to a trace it did not write: the
    secrets the import is given, API-key-shaped text and a value under a credential's name."""
    folder = tmp_path / "foreign"
    foreign_trace(folder / "plain.jsonl", SECRET, KEY_SHAPED)
    # In a trace of its own: nothing else in it is planted, so only the escaped text is found.
    escaped = foreign_trace(folder / "escaped.jsonl", ACCENTED)
    assert "\\u00e9" in escaped.read_text("ascii")  # not how our writer would write it
    store = open_store(store_url)
    try:
        assert import_traces(store, [folder], secrets=[SECRET, ACCENTED]) == (2, 0)
    finally:
        store.close()
    rows = stored_rows(store_url)
    text = repr(rows)
    assert {row[0] for row in rows["runs"]} == {"plain", "escaped"}
    assert all(rows.values()), "every table has the foreign runs"
    assert f"'api_key': '{REDACTED}" in text
    for secret in (SECRET, ACCENTED, KEY_SHAPED, MODEL_KEY):
        assert secret not in text


def test_runs_import_hides_the_stores_password(postgres_url: str, tmp_path: Path) -> None:
    """``fsm-agent runs import`` into a PostgreSQL store: the password of the store's URL,
    written in a foreign trace, is not kept (nor API-key-shaped text)."""
    password = "store-password-0123"
    url = f"{postgres_url}?password={password}"  # the throwaway cluster trusts loopback
    trace = foreign_trace(tmp_path / "foreign" / "foreign-run.jsonl", password, KEY_SHAPED)
    assert main(["runs", "--store", url, "import", str(trace)]) == 0
    text = repr(stored_rows(url))
    assert "foreign-run" in text
    assert password not in text
    assert KEY_SHAPED not in text


class KeepsAll(Redactor):
    """A redactor that replaces nothing."""

    def value(self, value: Any) -> Any:
        return value


def test_import_changes_nothing_our_writer_wrote() -> None:
    """A trace our writer wrote is redacted already: what the store keeps of each golden trace
    is what it keeps when nothing is redacted on reading."""
    for path in sorted(GOLDEN.glob("*.jsonl")):
        assert summarize_trace(path) == summarize_trace(path, KeepsAll()), path.name


def test_a_postgresql_stores_password_is_a_secret_of_the_run(
    postgres_url: str, tmp_path: Path
) -> None:
    """An agent given a ``PostgresRunStore`` (not its URL) hides that URL's password too: a
    model repeating it writes ``[REDACTED]`` in the trace."""
    password = "store-password-0123"
    store = PostgresRunStore(f"{postgres_url}?password={password}")  # loopback is trusted
    answer = f"the store's password is {password} {SECRET} {KEY_SHAPED}"
    model = ScriptedModel(parse_scenario({"steps": [{"content": [{"text": answer}]}]}))
    trace = tmp_path / "run.jsonl"
    try:
        agent = Agent(model=model, cwd=tmp_path, trace=trace, store=store, secrets=[SECRET])
        assert password in agent.secrets
        assert agent.run_sync("go").terminal == "completed"
        assert wait_for_store_writes(timeout_s=30)
    finally:
        store.close()
    written = trace.read_text("utf-8")
    masks = " ".join(mask(len(secret)) for secret in (password, SECRET, KEY_SHAPED))
    assert f"the store's password is {masks}" in written
    for secret in (password, SECRET, KEY_SHAPED):
        assert secret not in written


def test_names_and_call_ids_redacted_alike_stay_one_row_each(tmp_path: Path) -> None:
    """Two transitions, or two calls, told apart only by the secrets in their names (of one
    length: a mask keeps it) are one row once redacted (the tables' keys): counted together,
    and the import does not fail."""
    other = "configured-hunter3-secret"  # as long as SECRET
    records: list[dict[str, Any]] = [
        {"record": "header", "meta": {"model": "m"}},
        *(
            {
                "record": "effect",
                "effect": {"type": "RunToolStep", "call_id": cid, "tool_name": "t"},
            }
            for cid in (SECRET, other)
        ),
        *(
            {"record": "transition", "name": name, "machine": "loop", "dest": "x"}
            for name in (SECRET, other)
        ),
    ]
    trace = tmp_path / "twins.jsonl"
    trace.write_text("".join(json.dumps(record) + "\n" for record in records), "utf-8")
    kept = summarize_trace(trace, Redactor([SECRET, other]))
    assert kept.transitions == {mask(len(SECRET)): 2}
    assert [call.call_id for call in kept.tool_calls] == [mask(len(SECRET))]


def test_a_trace_path_naming_a_secret_is_stored_redacted(
    store_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The ``trace_path`` column is redacted as the rest of the row is: a run whose trace lives
    in a folder named for a secret (or API-key-shaped) stores ``[REDACTED]`` there, and so
    does an import of that folder; a trace that cannot be indexed is logged without it."""
    folder = tmp_path / f"runs-{SECRET}-{KEY_SHAPED}"
    model = ScriptedModel(parse_scenario({"steps": [{"content": [{"text": "done"}]}]}))
    agent = Agent(
        model=model, cwd=tmp_path, trace=folder / "run.jsonl", store=store_url, secrets=[SECRET]
    )
    assert agent.run_sync("go").terminal == "completed"
    assert wait_for_store_writes(timeout_s=30)
    store = open_store(store_url)
    try:
        assert import_traces(store, [folder], secrets=[SECRET]) == (1, 0)
    finally:
        store.close()
    rows = stored_rows(store_url)
    (run,) = rows["runs"]
    assert f"runs-{mask(len(SECRET))}-{mask(len(KEY_SHAPED))}" in repr(run)
    assert SECRET not in repr(rows)
    assert KEY_SHAPED not in repr(rows)

    with caplog.at_level(logging.WARNING, logger="fsm_agent.store"):
        assert not index_run(folder / "missing.jsonl", store_url, secrets=[SECRET])
    assert "was not indexed" in caplog.text
    assert SECRET not in caplog.text
    assert KEY_SHAPED not in caplog.text
