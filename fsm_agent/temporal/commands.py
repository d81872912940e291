"""The command line of Temporal-hosted sessions: ``worker``, ``approve`` and ``run --temporal``.

The parsers are added by :mod:`fsm_agent.cli`; ``temporalio`` is imported only when one of
these commands runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import Any

from fsm_agent.errors import ConfigError
from fsm_agent.terminal_text import shown
from fsm_agent.trace.redact import KEY_RULES_ONLY

DEFAULT_ADDRESS = "127.0.0.1:7233"
ADDRESS_ENV = "TEMPORAL_ADDRESS"
DEFAULT_FACTORY = "fsm_agent.temporal.activities:default_factory"


def add_cluster_options(command: argparse.ArgumentParser, *, queue: bool) -> None:
    """``--address`` and ``--namespace`` (and ``--task-queue`` when ``queue``)."""
    command.add_argument(
        "--address",
        default=os.environ.get(ADDRESS_ENV, DEFAULT_ADDRESS),
        metavar="HOST:PORT",
        help=f"the Temporal frontend (default: ${ADDRESS_ENV}, else {DEFAULT_ADDRESS})",
    )
    command.add_argument("--namespace", default="default", help="the Temporal namespace")
    command.add_argument(
        "--data-converter",
        default=None,
        metavar="MODULE:NAME",
        help="the temporalio DataConverter (or a function returning one) that every worker "
        "and client of the sessions shares, e.g. one whose payload codec encrypts the history "
        "(default: Temporal's, which keeps it in clear)",
    )
    if queue:
        command.add_argument(
            "--task-queue", default="fsm-agent", help="the task queue sessions run on"
        )


def add_parsers(commands: Any) -> None:
    """The ``worker`` and ``approve`` commands."""
    worker = commands.add_parser("worker", help="serve agent sessions from a Temporal cluster")
    add_cluster_options(worker, queue=True)
    worker.add_argument(
        "--factory",
        default=DEFAULT_FACTORY,
        metavar="MODULE:FUNCTION",
        help="the function that builds each session's Agent from its params "
        "(default: Claude with the built-in tools)",
    )
    worker.set_defaults(handler=worker_command)

    approve = commands.add_parser(
        "approve", help="answer a permission question of a Temporal-hosted session"
    )
    approve.add_argument("run", help="the session (its workflow id, as `run --temporal` prints)")
    approve.add_argument("call_id", help="the tool call asking (as `run --temporal` prints)")
    approve.add_argument("decision", choices=["allow", "deny"], help="the answer")
    approve.add_argument("--message", default="", help="for a denial, what the model is told")
    add_cluster_options(approve, queue=False)
    approve.set_defaults(handler=approve_command)


def add_run_options(run: argparse.ArgumentParser) -> None:
    """``run --temporal`` and its options."""
    run.add_argument(
        "--temporal",
        action="store_true",
        help="run the session on a Temporal cluster (see `fsm-agent worker`) and stream it",
    )
    add_cluster_options(run, queue=True)
    run.add_argument(
        "--params",
        default="{}",
        metavar="JSON",
        help="with --temporal: a JSON object passed to the workers' agent factory",
    )
    run.add_argument(
        "--continue-after-events",
        type=int,
        default=None,
        metavar="N",
        help="with --temporal: continue the session as a new run once its history holds N "
        "events (the server's own suggestion applies either way)",
    )
    run.add_argument(
        "--continue-after-bytes",
        type=int,
        default=None,
        metavar="N",
        help="with --temporal: continue the session as a new run once its history holds N "
        "bytes (model calls carry their request, so bytes grow with context times turns)",
    )


def _require_temporalio() -> None:
    """Refuse clearly when the ``temporal`` extra is not installed."""
    import importlib.util  # noqa: PLC0415

    if importlib.util.find_spec("temporalio") is None:
        raise ConfigError("the Temporal SDK is not installed: pip install 'fsm_agent[temporal]'")


def _data_converter(args: argparse.Namespace) -> Any:
    """What ``--data-converter`` names (None: Temporal's default)."""
    if args.data_converter is None:
        return None
    from fsm_agent.temporal.named_objects import load_data_converter  # noqa: PLC0415

    return load_data_converter(args.data_converter)


def worker_command(args: argparse.Namespace) -> int:
    """``fsm-agent worker``: serve sessions until interrupted."""
    _require_temporalio()
    from fsm_agent.temporal.activities import load_factory  # noqa: PLC0415
    from fsm_agent.temporal.worker import run_worker  # noqa: PLC0415

    factory = load_factory(args.factory)
    converter = _data_converter(args)

    def serving() -> None:  # said once the cluster answered, not before
        print(
            f"fsm-agent worker: serving task queue {args.task_queue!r} at {args.address}",
            file=sys.stderr,
            flush=True,
        )

    asyncio.run(
        run_worker(
            args.address,
            task_queue=args.task_queue,
            factory=factory,
            namespace=args.namespace,
            data_converter=converter,
            on_connected=serving,
        )
    )
    return 0


def approve_command(args: argparse.Namespace) -> int:
    """``fsm-agent approve RUN CALL_ID allow|deny``."""
    _require_temporalio()
    from fsm_agent.temporal.client import answer_permission, connect  # noqa: PLC0415

    converter = _data_converter(args)

    async def answer() -> str:
        client = await connect(args.address, namespace=args.namespace, data_converter=converter)
        return await answer_permission(
            client, args.run, args.call_id, args.decision, message=args.message
        )

    print(asyncio.run(answer()))
    return 0


def run_command(args: argparse.Namespace) -> int:
    """``fsm-agent run --temporal``: start a session, print its progress, wait for its end.

    Returns 0 for ``completed``, 1 for any other terminal reason.
    """
    try:
        params = json.loads(args.params)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"--params is not JSON: {exc}") from exc
    if not isinstance(params, dict):
        raise ConfigError("--params must be a JSON object (the factory's keyword arguments)")
    _require_temporalio()
    from fsm_agent.temporal.client import (  # noqa: PLC0415
        answer_permission,
        check_history_bounds,
        connect,
        start_session,
        watch_session,
    )

    # Before reaching for the cluster.
    check_history_bounds(args.continue_after_events, args.continue_after_bytes)
    converter = _data_converter(args)

    async def go() -> dict[str, Any]:
        client = await connect(args.address, namespace=args.namespace, data_converter=converter)
        handle = await start_session(
            client,
            args.prompt,
            task_queue=args.task_queue,
            params=params,
            trace=args.trace,
            continue_after_events=args.continue_after_events,
            continue_after_bytes=args.continue_after_bytes,
        )
        print(f"session {handle.id} on task queue {args.task_queue!r}", flush=True)

        # The workers' secrets stay on the workers; API-key-shaped text is never printed, as
        # the in-process view never prints it (DESIGN §8); nor a character the terminal would
        # obey or hide (:mod:`~fsm_agent.terminal_text`).
        def printable(text: str) -> str:
            return shown(KEY_RULES_ONLY.text(text))

        async for item in watch_session(handle):
            data = item.data
            if item.kind == "transition" and data["machine"] == "loop":
                print(f"  → {data['name']}", flush=True)
            elif item.kind == "message" and data["role"] == "assistant" and data["text"]:
                print(printable(data["text"]), flush=True)
            elif item.kind == "question":
                call = data["call_id"]
                question = f"  ? {data['tool_name']} {json.dumps(data['input'])}"
                print(printable(question), flush=True)
                if args.yes:
                    await answer_permission(client, handle.id, call, "allow")
                else:
                    print(
                        f"    answer: fsm-agent approve {handle.id} {call} allow|deny", flush=True
                    )
        result: dict[str, Any] = await handle.result()
        return result

    result = asyncio.run(go())
    ended = f"ended: {result['terminal']}   turns: {result['turns']}   runs: {result['runs']}"
    print(f"\n{ended}   trace: {result['trace']}")
    return 0 if result["terminal"] == "completed" else 1
