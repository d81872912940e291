"""The benchmark's workloads still run against the library as it is.

``bench/run.py`` is not a test and CI does not run it, so a change to an API it drives would
only show the next time someone benchmarks. Each workload the headline ratios are made of is
run once here, and the two floors the unmet goals are set beside do the work they claim.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        spec = importlib.util.spec_from_file_location("bench_run", ROOT / "bench" / "run.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path.remove(str(ROOT / "bench"))


def test_transition_workloads_run(bench: ModuleType) -> None:
    bench.bare_trigger()()
    bench.core_runs()()
    bench.core_with_ready_lines()()
    traced, lines = bench.traced_runs()
    traced()
    # One line per feed, and each run's end record.
    runs = bench.recorded_runs()
    assert lines() == sum(len(events) for _entry, events, _count in runs) + len(runs)
    written, bare_line = bench.record_writes()
    written()
    bare_line()


def test_replay_workloads_run(bench: ModuleType) -> None:
    corpus = sorted((ROOT / "traces").glob("*.jsonl"))[:5]
    for build in (bench.parse_files, bench.feed_core, bench.replay_files, bench.replay_work):
        build(corpus)()


def test_replay_work_renders_what_replay_checks(
    bench: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bare floor renders every effect replay checks: it feeds the same events."""
    from fsm_agent.trace import render_fns
    from fsm_agent.trace.replay import replay

    corpus = sorted((ROOT / "traces").glob("*.jsonl"))
    rendered = 0
    original = render_fns.render_effect

    def counting(effect: object) -> render_fns.Rendered:
        nonlocal rendered
        rendered += 1
        return original(effect)

    monkeypatch.setattr(render_fns, "render_effect", counting)
    bench.replay_work(corpus)()
    assert rendered == sum(replay(path).effects for path in corpus)
