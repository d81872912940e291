"""pytest plugin: replay recorded traces as test items (``--fsm-replay PATH``).

Registered through the ``pytest11`` entry point ``fsm_agent_replay``. Give ``--fsm-replay``
once or more, each a ``.jsonl`` trace or a folder searched recursively for ``*.jsonl``; every
trace becomes one test item that replays it against this library's core. A divergence is
shown as the seq, the recorded and the replayed record and the records around it, not as a
traceback.

The plugin imports nothing heavy at start-up (never ``anthropic``, and not the core either):
the trace package is imported when the first item runs, so a broken core cannot break pytest.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

_OPTION = "--fsm-replay"


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--fsm-replay PATH`` (repeatable)."""
    group = parser.getgroup("fsm_agent", "fsm_agent trace replay")
    group.addoption(
        _OPTION,
        action="append",
        default=[],
        metavar="PATH",
        dest="fsm_replay",
        help="replay a recorded fsm_agent trace (a .jsonl file, or a folder of them) as a "
        "test; repeatable",
    )


class ReplayFile(pytest.File):
    """A trace file given with ``--fsm-replay``; it holds one item."""

    def collect(self) -> Iterator[pytest.Item]:
        """One :class:`ReplayItem` per trace."""
        yield ReplayItem.from_parent(self, name="replay")


class ReplayItem(pytest.Item):
    """Replays one trace; fails on the first divergence."""

    def runtest(self) -> None:
        """Replay the trace (raises a ``TraceError`` when it does not replay)."""
        from fsm_agent.trace.replay import replay  # noqa: PLC0415 - keep start-up light

        if not self.path.exists():
            raise FileNotFoundError(f"--fsm-replay: no such trace: {self.path}")
        replay(self.path)

    def repr_failure(
        self,
        excinfo: pytest.ExceptionInfo[BaseException],
        style: Any = None,
    ) -> str | Any:
        """A readable account of why the trace did not replay."""
        from fsm_agent.errors import TraceDivergence, TraceError  # noqa: PLC0415
        from fsm_agent.trace.divergence import format_divergence  # noqa: PLC0415

        error = excinfo.value
        if isinstance(error, TraceDivergence):
            return format_divergence(error)
        if isinstance(error, TraceError | FileNotFoundError):
            return f"{self.path}: {error}" if str(self.path) not in str(error) else str(error)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        """Where the item comes from, for pytest's report lines."""
        return self.path, None, f"fsm replay {self.path.name}"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Append one replay item per trace given with ``--fsm-replay``."""
    paths: list[str] = config.getoption("fsm_replay") or []
    if not paths:
        return
    from fsm_agent.trace.reader import trace_files  # noqa: PLC0415 - only when asked for

    for path in trace_files(paths):
        collector = ReplayFile.from_parent(session, path=path.resolve())
        items.extend(collector.collect())
