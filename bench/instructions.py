"""The two speed goals of DESIGN §7 that depend most on the machine, counted in instructions.

    python bench/instructions.py     # needs valgrind; about five minutes

``bench/run.py`` times a traced transition against a bare ``transitions`` trigger plus one
orjson line, and replay against the core fed the same events plus parsing the files, in CPU
time. Those ratios move with the machine and its load: a bare trigger is a short loop that
runs from the processor's caches at several instructions per cycle, the core and the writer
touch far more memory and run at about one. Counting the instructions each side executes
(valgrind's callgrind, deterministic on one machine) gives the same ratios without the
machine's part; both are worth reading, neither replaces the other.

Each figure is the difference between a child process doing the work three times and one
doing it once (so the interpreter's start and the warm-up cancel out), divided by the work
done: per transition taken for the catalogue's runs, per pass for the golden traces.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import orjson
import run  # the benchmark's own builders, beside this script (its folder is on the path)

ROOT = Path(__file__).resolve().parent.parent
_COLLECTED = re.compile(rb"Collected : (\d+)")


def _work() -> dict[str, Callable[[], None]]:
    """Each measured piece of work, one pass of it (imported here: the child process)."""
    corpus = sorted((ROOT / "traces").glob("*.jsonl"))
    transitions = run.catalogue_transitions()
    bare_pair = run.bare_trigger()
    traced, _lines = run.traced_runs()
    delta = {"type": "text_delta", "text": "hello"}
    event = {"type": "content_block_delta", "index": 0, "delta": delta}
    line = {"record": "event", "seq": 1, "event": {"type": "ModelStreamEvent", "event": event}}
    options = orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE

    def bare() -> None:
        for _ in range(transitions // 2):
            bare_pair()

    def lines() -> None:
        write = io.BytesIO().write
        for _ in range(transitions):
            write(orjson.dumps(line, option=options))

    return {
        "bare": bare,
        "core": run.core_runs(),
        "traced": traced,
        "line": lines,
        "replay": run.replay_files(corpus),
        "fed": run.feed_core(corpus),
        "parse": run.parse_files(corpus),
    }


def _probe(name: str, passes: int) -> None:
    """The child: every piece of work once (warm), then ``name`` ``passes`` times."""
    work = _work()
    for each in work.values():
        each()
    for _ in range(passes):
        work[name]()


def _instructions(name: str, passes: int) -> int:
    command = [
        "valgrind",
        "--tool=callgrind",
        "--callgrind-out-file=/dev/null",
        sys.executable,
        __file__,
        "--probe",
        name,
        str(passes),
    ]
    environment = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(command, capture_output=True, check=True, env=environment)
    found = _COLLECTED.search(done.stderr)
    if found is None:
        raise RuntimeError(f"callgrind printed no count for {name}: {done.stderr[-400:]!r}")
    return int(found.group(1))


def per_pass(name: str) -> float:
    """Instructions of one pass of ``name``'s work."""
    return (_instructions(name, 3) - _instructions(name, 1)) / 2


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--probe", nargs=2, metavar=("WORK", "PASSES"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        _probe(args.probe[0], int(args.probe[1]))
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (Debian: apt-get install valgrind)", file=sys.stderr)
        return 2
    transitions = run.catalogue_transitions()
    counts = {name: per_pass(name) for name in _work()}
    each = {name: counts[name] / transitions for name in ("bare", "core", "traced", "line")}
    bare = each["bare"]  # a pass makes about as many triggers as the catalogue's transitions
    print("fsm_agent benchmarks in instructions (valgrind callgrind; ratios in the same run)\n")
    run.row("bare transitions trigger", f"{bare / 1e3:8.1f} k", "baseline")
    run.row("orjson line", f"{each['line'] / 1e3:8.1f} k", "baseline")
    run.row(
        "core, per transition taken",
        f"{each['core'] / 1e3:8.1f} k",
        f"{each['core'] / bare:.2f}× bare",
    )
    baseline = bare + each["line"]
    traced = each["traced"]
    run.row(
        "one traced transition",
        f"{traced / 1e3:8.1f} k",
        f"{traced / baseline:.2f}× (bare trigger + one orjson line); goal ≤ 1.5"
        + run.unreached(traced <= 1.5 * baseline),
    )
    floor = counts["fed"] + counts["parse"]
    run.row(
        "replay ÷ (core fed + parse), golden",
        f"{counts['replay'] / floor:8.2f} ×",
        f"replay {counts['replay'] / 1e6:.1f} M, core fed {counts['fed'] / 1e6:.1f} M, parse"
        f" {counts['parse'] / 1e6:.1f} M; goal ≤ 1.2"
        + run.unreached(counts["replay"] <= 1.2 * floor),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
