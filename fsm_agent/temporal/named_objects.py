"""What a ``MODULE:NAME`` option of the Temporal commands names: user code, imported by name.

``fsm-agent worker --factory`` names the function that builds each session's agent, and every
Temporal command's ``--data-converter`` the ``DataConverter`` its client uses (one whose payload
codec encrypts, say). Both are looked up the same way, and fail the same clear way.
"""

from __future__ import annotations

from typing import Any

from fsm_agent.errors import ConfigError


def load_named(spec: str, *, option: str, kind: str, example: str) -> Any:
    """The object ``spec`` (``module:name``) names; ``kind`` words what ``name`` is.

    Raises:
        ConfigError: the spec is malformed, the module cannot be imported, or the name is
            missing (``option`` and ``example`` word the message).
    """
    module_name, _, name = spec.partition(":")
    if not module_name or not name:
        raise ConfigError(f"{option} {spec!r}: expected module:{kind}, e.g. {example}")
    import importlib  # noqa: PLC0415 - only this path imports user code

    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"{option} {spec!r}: cannot import {module_name!r}: {exc}") from exc
    found = getattr(module, name, None)
    if found is None:
        raise ConfigError(f"{option} {spec!r}: {module_name} has no {kind} {name!r}")
    return found


def load_data_converter(spec: str) -> Any:
    """The ``temporalio.converter.DataConverter`` that ``spec`` names, or that the function it
    names returns (``--data-converter``): what every client and worker of the sessions must
    share, e.g. one whose payload codec encrypts the history.

    Raises:
        ConfigError: as :func:`load_named`, or the object is not a ``DataConverter``.
    """
    from temporalio.converter import DataConverter  # noqa: PLC0415 - the extra's SDK

    found = load_named(
        spec, option="--data-converter", kind="name", example="mypkg.secure:converter"
    )
    if callable(found) and not isinstance(found, DataConverter):
        try:
            found = found()
        except TypeError as exc:  # a function that wants arguments
            raise ConfigError(f"--data-converter {spec!r}: calling it failed: {exc}") from exc
    if not isinstance(found, DataConverter):
        raise ConfigError(
            f"--data-converter {spec!r}: expected a temporalio DataConverter (or a function "
            f"returning one), got {type(found).__name__}"
        )
    return found
