"""The Temporal commands' checks that need no server: factories, options, and imports."""

from __future__ import annotations

import subprocess
import sys

import pytest

from fsm_agent import cli
from fsm_agent.errors import ConfigError
from fsm_agent.temporal.activities import load_factory
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario


def test_load_factory_names_what_is_wrong() -> None:
    """A malformed, missing or non-callable --factory is a ConfigError naming the problem."""
    with pytest.raises(ConfigError, match="expected module:function"):
        load_factory("no_colon_here")
    with pytest.raises(ConfigError, match="cannot import 'no_such_module_xyz'"):
        load_factory("no_such_module_xyz:make")
    with pytest.raises(ConfigError, match="has no function 'nothing'"):
        load_factory("fsm_agent.temporal.activities:nothing")
    assert load_factory("fsm_agent.temporal.activities:default_factory").__name__ == (
        "default_factory"
    )


def test_run_temporal_refuses_options_of_a_local_agent(capsys: pytest.CaptureFixture[str]) -> None:
    """`run --temporal --model X` is refused: the workers' factory decides the model."""
    status = cli.main(["run", "hi", "--temporal", "--model", "scripted:x.json"])
    assert status == cli.EXIT_USAGE
    assert "--model: with --temporal the workers' agent factory decides" in capsys.readouterr().err


def test_run_temporal_params_must_be_a_json_object(capsys: pytest.CaptureFixture[str]) -> None:
    """--params that is not a JSON object fails before any connection is tried."""
    assert cli.main(["run", "hi", "--temporal", "--params", "[1]"]) == cli.EXIT_FAILED
    assert "--params must be a JSON object" in capsys.readouterr().err
    assert cli.main(["run", "hi", "--temporal", "--params", "{"]) == cli.EXIT_FAILED
    assert "--params is not JSON" in capsys.readouterr().err


def test_run_temporal_refuses_a_history_bound_below_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--continue-after-events or --continue-after-bytes 0 or less fails before any
    connection, naming the bound."""
    pytest.importorskip("temporalio", reason="the fsm_agent[temporal] extra is not installed")
    for flag in ("events", "bytes"):
        for bound in ("0", "-3"):
            argv = ["run", "hi", "--temporal", f"--continue-after-{flag}", bound]
            assert cli.main(argv) == cli.EXIT_FAILED
            assert f"continue_after_{flag} must be a positive number" in capsys.readouterr().err


def test_the_command_line_does_not_import_temporalio() -> None:
    """Parsing the command line (which knows the Temporal commands) loads no temporalio."""
    code = (
        "import sys; from fsm_agent import cli; cli._parser(); "
        "assert 'temporalio' not in sys.modules, 'temporalio was imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_scripted_model_seek_continues_the_script_where_asked() -> None:
    """seek(n) makes the next request play step n + 1; a negative position is refused."""
    model = ScriptedModel(
        parse_scenario({"steps": [{"content": [{"text": t}]} for t in ("one", "two")]})
    )
    model.seek(1)
    assert model.remaining == 1
    with pytest.raises(ConfigError, match="must not be negative"):
        model.seek(-1)
