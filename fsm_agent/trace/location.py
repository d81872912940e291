"""Where a run's trace goes: the default trace folder, and what a ``trace=`` target means.

A target that ends in ``/`` (or the platform's separator), or that names an existing folder,
is a folder: it is created when missing and each run gets a new file in it, so no run
overwrites another. Any other target is the trace file itself. The default folder is the
platform's per-user state folder (``~/.local/state/fsm_agent/traces`` on Linux), outside the
working folder, so the agent's own Glob and Grep never come across its traces;
``FSM_AGENT_TRACE_DIR`` overrides it.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Mapping
from pathlib import Path

from fsm_agent.errors import ConfigError

TRACE_DIR_ENV = "FSM_AGENT_TRACE_DIR"
"""The environment variable that overrides the default trace folder."""


def default_trace_folder(environ: Mapping[str, str] | None = None) -> Path:
    """The folder traces go to when no target is given.

    Args:
        environ: the environment to read ``FSM_AGENT_TRACE_DIR`` from (default: the process's).
    """
    override = (os.environ if environ is None else environ).get(TRACE_DIR_ENV)
    if override:
        return Path(override).expanduser()
    import platformdirs  # noqa: PLC0415 - only runs that trace by default need it

    return platformdirs.user_state_path("fsm_agent") / "traces"


def names_folder(target: str | os.PathLike[str]) -> bool:
    """Whether a trace target is a folder: it ends in a separator, or is an existing folder."""
    raw = os.fspath(target)
    return raw.endswith(("/", os.sep)) or Path(raw).is_dir()


def new_run_id(now: dt.datetime | None = None) -> str:
    """A new run id: the (UTC) start time, so ids sort by it, and 48 random bits, so runs
    started in the same second on any number of machines do not share one (issue 13)."""
    moment = now if now is not None else dt.datetime.now(dt.UTC)
    # The bytes secrets.token_hex would give (os.urandom), without importing random for it.
    return f"run-{moment.strftime('%Y%m%d-%H%M%S')}-{os.urandom(6).hex()}"


def prepare_trace_file(target: str | os.PathLike[str] | None, *, run_id: str | None = None) -> Path:
    """The file a run's trace is written to; its folder is created.

    Args:
        target: a folder (see :func:`names_folder`), a file, or None for the default folder.
        run_id: the run's id; a file made in a folder is named after it (default: a new id).

    Raises:
        ConfigError: the folder cannot be created (a file is in the way, no permission).
    """
    if target is None:
        folder = default_trace_folder()
    elif names_folder(target):
        folder = Path(target).expanduser()
    else:
        path = Path(target).expanduser()
        _make_folder(path.parent, f"the folder of trace file {os.fspath(target)}")
        return path
    _make_folder(folder, f"trace folder {folder}")
    return folder / f"{run_id or new_run_id()}.jsonl"


def _make_folder(folder: Path, what: str) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise ConfigError(f"{what} cannot be created: a file of that name exists") from None
    except OSError as exc:
        raise ConfigError(f"{what} cannot be created: {exc.strerror or exc}") from None
