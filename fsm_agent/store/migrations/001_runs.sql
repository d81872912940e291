-- The run index (issue 13). Every row is derived from a JSONL trace, which stays the source of
-- truth: dropping these tables and importing the traces again rebuilds them.
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY,
    trace_path TEXT NOT NULL,
    started TEXT NOT NULL,
    ended TEXT NOT NULL,
    terminal TEXT NOT NULL,
    model TEXT NOT NULL,
    turns INTEGER NOT NULL,
    input_tokens BIGINT NOT NULL,
    output_tokens BIGINT NOT NULL,
    cost_usd DOUBLE PRECISION,
    parent_run TEXT NOT NULL
);
CREATE INDEX runs_started ON runs (started);
CREATE INDEX runs_terminal ON runs (terminal);
CREATE INDEX runs_model ON runs (model);

CREATE TABLE run_transitions (
    run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    count INTEGER NOT NULL,
    PRIMARY KEY (run_id, name)
);
CREATE INDEX run_transitions_name ON run_transitions (name, count);

CREATE TABLE tool_calls (
    run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    call_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    path TEXT NOT NULL,
    outcome TEXT NOT NULL,
    PRIMARY KEY (run_id, call_id)
);
CREATE INDEX tool_calls_tool ON tool_calls (tool);

CREATE TABLE permission_decisions (
    run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    call_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    behavior TEXT NOT NULL,
    source TEXT NOT NULL,
    rule TEXT NOT NULL,
    rule_source TEXT NOT NULL,
    PRIMARY KEY (run_id, position)
);
CREATE INDEX permission_decisions_behavior ON permission_decisions (behavior);
