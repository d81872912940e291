"""Agent sessions as Temporal workflows (the ``fsm_agent[temporal]`` extra).

The session workflow (:mod:`~fsm_agent.temporal.workflow`) hosts the pure core and turns its
effects into activities (:mod:`~fsm_agent.temporal.activities`) performed by workers
(:mod:`~fsm_agent.temporal.worker`); clients start, watch, answer and abort sessions
(:mod:`~fsm_agent.temporal.client`). The names below load on first use, so importing this
package (the command line does) does not import ``temporalio``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fsm_agent.lazy_exports import lazy_exports

_PUBLIC = {
    "AgentFactory": "fsm_agent.temporal.activities",
    "SessionActivities": "fsm_agent.temporal.activities",
    "load_factory": "fsm_agent.temporal.activities",
    "SessionWorkflow": "fsm_agent.temporal.workflow",
    "session_worker": "fsm_agent.temporal.worker",
    "run_worker": "fsm_agent.temporal.worker",
    "workflow_runner": "fsm_agent.temporal.worker",
    "SessionProgress": "fsm_agent.temporal.client",
    "start_session": "fsm_agent.temporal.client",
    "watch_session": "fsm_agent.temporal.client",
    "answer_permission": "fsm_agent.temporal.client",
}

__all__ = [
    "AgentFactory",
    "SessionActivities",
    "SessionProgress",
    "SessionWorkflow",
    "answer_permission",
    "load_factory",
    "run_worker",
    "session_worker",
    "start_session",
    "watch_session",
    "workflow_runner",
]

if TYPE_CHECKING:
    from fsm_agent.temporal.activities import AgentFactory, SessionActivities, load_factory
    from fsm_agent.temporal.client import (
        SessionProgress,
        answer_permission,
        start_session,
        watch_session,
    )
    from fsm_agent.temporal.worker import run_worker, session_worker, workflow_runner
    from fsm_agent.temporal.workflow import SessionWorkflow

__getattr__, __dir__ = lazy_exports(__name__, _PUBLIC, globals())
