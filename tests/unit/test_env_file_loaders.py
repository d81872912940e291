"""A program loading the ``.env`` files where it runs meets the Read rules on them.

Found in bypass mode with ``Read(./.env)`` denied: ``python3 -m dotenv list`` printed the
secrets unasked (``cat .env`` was denied): it names no file, and loads ``.env`` from the folder
it runs in, as ``docker compose``, ``bun``, ``pipenv run`` and ``next`` do; so did ``docker
--context default compose config``, its subcommand after the program's own options.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_hostile_commands import decide

from fsm_agent import PermissionMode
from fsm_agent.core.kinds import PermissionBehavior
from fsm_agent.toolbox.env_file_loaders import env_files, loads_env_files


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / ".env").write_text("API_KEY=secret\n")
    (tmp_path / ".env.staging").write_text("API_KEY=other\n")
    (tmp_path / "app").mkdir()
    return tmp_path


@pytest.mark.parametrize(
    "command",
    [
        "python3 -m dotenv list",
        "dotenv get API_KEY",
        "docker compose config",
        "bun -e 'console.log(process.env)'",
        "bunx some-tool",
        "pipenv run env",
        "npx next build",
        "cd app && cd .. && flask run",
        # the subcommand after the program's own options (found: they ran)
        "docker --context default compose config",
        "docker -l error compose config",
        "pipenv --python 3.11 run env",
    ],
)
def test_a_program_loading_env_files_asks_under_a_read_rule(command: str, work: Path) -> None:
    decided = decide(command, work, mode=PermissionMode.BYPASS, deny={"Read(./.env)"})
    assert decided.behavior is PermissionBehavior.DENY, decided.reason
    assert decided.rule == "Read(./.env)"


def test_a_file_found_there_counts(work: Path) -> None:
    decided = decide("dotenv list", work, mode=PermissionMode.BYPASS, deny={"Read(./.env.staging)"})
    assert decided.behavior is PermissionBehavior.DENY


@pytest.mark.parametrize("command", ["python3 -m dotenv list", "bun test", "docker compose up"])
def test_without_a_rule_on_them_they_run(command: str, work: Path) -> None:
    decided = decide(command, work, mode=PermissionMode.BYPASS, deny={"Read(./secrets/**)"})
    assert decided.behavior is PermissionBehavior.ALLOW, decided.reason


def test_which_programs_load_them(work: Path) -> None:
    assert loads_env_files(("python3.12", "-m", "dotenv", "list"))
    assert loads_env_files(("/usr/bin/docker", "compose", "ps"))
    assert not loads_env_files(("docker", "ps"))
    assert loads_env_files(("docker", "--context", "x", "compose", "config"))
    assert not loads_env_files(("pipenv", "install"))
    assert not loads_env_files(())
    assert work / ".env.staging" in env_files(work)
    assert work / ".env.local" in env_files(work)  # not there yet: a name such a program reads
