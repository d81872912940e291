"""Many processes writing runs into one PostgreSQL store at once lose nothing (issue 13)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from fsm_agent.store.opening import open_store
from fsm_agent.store.query import RunQuery, TransitionCount

GOLDEN = Path(__file__).parents[2] / "traces"
WRITERS = 8
RUNS_EACH = 25

# Each writer indexes its own runs one transaction at a time, and the same shared run too.
WRITER = """
import sys, attrs
from fsm_agent.store.opening import open_store
from fsm_agent.store.summary import summarize_trace
url, writer, runs, trace = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
base = summarize_trace(trace)
store = open_store(url)
for n in range(runs):
    store.add([attrs.evolve(base, run_id=f"w{writer}-{n}")])
    store.add([attrs.evolve(base, run_id="shared")])
store.close()
"""


def test_eight_writers_lose_no_run(postgres_url: str) -> None:
    """8 processes, each indexing its runs and one shared run: every run and row is there."""
    trace = str(GOLDEN / "rejected_and_denied.jsonl")
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, postgres_url, str(n), str(RUNS_EACH), trace],
            stderr=subprocess.PIPE,
        )
        for n in range(WRITERS)
    ]
    for writer in writers:
        _, errors = writer.communicate(timeout=120)
        assert writer.returncode == 0, errors.decode()
    store = open_store(postgres_url)
    try:
        found = {run.run_id for run in store.runs(RunQuery())}
        assert found == {f"w{w}-{n}" for w in range(WRITERS) for n in range(RUNS_EACH)} | {"shared"}
        denied = store.runs(RunQuery(denied=True))
        assert len(denied) == WRITERS * RUNS_EACH + 1
        retried = RunQuery(transitions=(TransitionCount(name="next_turn"),), tool="Write")
        assert len(store.runs(retried)) == WRITERS * RUNS_EACH + 1
    finally:
        store.close()
