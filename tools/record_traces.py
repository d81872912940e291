"""Record the golden trace corpus (``traces/``) from the scripted catalogue, or check it.

    python tools/record_traces.py          # (re)write traces/<entry>.jsonl for every entry
    python tools/record_traces.py --check  # exit 1 when a trace is missing, stale or extra

A trace is stale when re-recording its entry gives different records (library_version and
meta are ignored). Re-record after a deliberate change to the tables, texts or the core.
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

from fsm_agent.testing.catalogue import ENTRIES, record
from fsm_agent.trace.reader import read_trace
from fsm_agent.trace.replay import diff_traces

TRACES = Path(__file__).resolve().parent.parent / "traces"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if the corpus is stale")
    parser.add_argument("--dir", type=Path, default=TRACES)
    args = parser.parse_args(argv)
    args.dir.mkdir(parents=True, exist_ok=True)
    problems: list[str] = []
    wanted = {f"{entry.name}.jsonl" for entry in ENTRIES}
    for entry in ENTRIES:
        path = args.dir / f"{entry.name}.jsonl"
        if not args.check:
            record(entry, path)
            continue
        buffer = io.BytesIO()
        record(entry, buffer)
        if not path.exists():
            problems.append(f"{path.name}: missing")
            continue
        fresh = read_trace(io.BytesIO(buffer.getvalue()))
        divergence = diff_traces(read_trace(path), fresh)
        if divergence is not None:
            problems.append(f"{path.name}: stale from seq {divergence.seq}")
    extra = sorted(p.name for p in args.dir.glob("*.jsonl") if p.name not in wanted)
    problems.extend(f"{name}: not produced by any catalogue entry" for name in extra)
    if problems:
        print("the golden corpus is out of date (run python tools/record_traces.py):")
        print("\n".join(f"  {p}" for p in problems))
        return 1
    verb = "checked" if args.check else "recorded"
    print(f"{verb} {len(ENTRIES)} traces in {args.dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
