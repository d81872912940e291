"""Settings files in Claude Code's format: permission rules, the default mode, extra folders, hooks.

``load_settings(cwd)`` reads, when they exist (SPEC §9.2 sources):

* ``~/.claude/settings.json`` (``userSettings``),
* ``<cwd>/.claude/settings.json`` (``projectSettings``),
* ``<cwd>/.claude/settings.local.json`` (``localSettings``),
* and each file given in ``extra_files`` (``flagSettings``, as ``--settings FILE``).

What is used::

    {"permissions": {"allow": ["Bash(npm run test:*)"], "deny": ["Read(./.env)"],
                     "ask": ["Bash(git push:*)"], "defaultMode": "acceptEdits",
                     "additionalDirectories": ["../docs"]},
     "hooks": {...}}

Rules keep their source, so every decision names the file a rule came from. ``defaultMode`` is
taken from the most specific file that sets it (flag over local over project over user).
``additionalDirectories`` are resolved against the working folder. ``hooks`` is kept as raw data
per file for :class:`~fsm_agent.runtime.hooks.Hooks`. Every other key (Claude Code files carry
many: ``env``, ``model``, ``statusLine``...) is kept in ``raw`` and otherwise ignored.

A file that is not JSON, or a key of the wrong type, is a ``ConfigError`` naming the file and
the key as a JSON path (``$.permissions.allow[2]``); nothing is half-loaded.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from fsm_agent.core.permission_rules import Rule, RuleBehavior, RuleSource, parse_rule
from fsm_agent.errors import ConfigError
from fsm_agent.runtime.permissions import PermissionMode

_MODES = {mode.value: mode for mode in PermissionMode}


@attrs.frozen(kw_only=True)
class HookSettings:
    """The ``hooks`` value of one settings file, as written there.

    Attributes:
        source: the SPEC §9.2 source name of the file (``projectSettings``...).
        path: the file.
        value: the ``hooks`` object.
    """

    source: str
    path: Path
    value: Mapping[str, Any]


@attrs.frozen(kw_only=True)
class SettingsFile:
    """One settings file that was read."""

    source: RuleSource
    path: Path
    raw: Mapping[str, Any]


@attrs.frozen(kw_only=True)
class Settings:
    """Settings merged from every file read.

    Attributes:
        rules: every permission rule, parsed, with its source and file.
        default_mode: ``permissions.defaultMode`` of the most specific file setting it.
        additional_directories: ``permissions.additionalDirectories``, resolved.
        hooks: each file's ``hooks`` value, in the order the files were read.
        files: the files read, in order (missing files are skipped).
    """

    rules: tuple[Rule, ...] = ()
    default_mode: PermissionMode | None = None
    additional_directories: tuple[Path, ...] = ()
    hooks: tuple[HookSettings, ...] = ()
    files: tuple[SettingsFile, ...] = ()

    @classmethod
    def from_mapping(
        cls,
        data: Mapping[str, Any],
        *,
        source: RuleSource = RuleSource.FLAG,
        path: Path | None = None,
        cwd: Path | None = None,
    ) -> Settings:
        """Settings from one already-parsed settings object (``path`` only names it)."""
        where = str(path) if path is not None else f"<{source.value}>"
        return _from_object(data, source, Path(where), (cwd or Path.cwd()).resolve())

    def restricting(self) -> Settings:
        """Only what narrows what the agent does: deny and ask rules, and a mode that grants
        nothing (``default``, ``plan``, ``dontAsk``); no allow rule, hook or extra folder."""
        widening = {PermissionMode.ACCEPT_EDITS, PermissionMode.BYPASS}
        return Settings(
            rules=tuple(rule for rule in self.rules if rule.behavior is not RuleBehavior.ALLOW),
            default_mode=None if self.default_mode in widening else self.default_mode,
            files=self.files,
        )

    def merged(self, other: Settings) -> Settings:
        """These settings, then ``other`` on top (its mode wins when it sets one)."""
        return Settings(
            rules=(*self.rules, *other.rules),
            default_mode=other.default_mode or self.default_mode,
            additional_directories=tuple(
                dict.fromkeys((*self.additional_directories, *other.additional_directories))
            ),
            hooks=(*self.hooks, *other.hooks),
            files=(*self.files, *other.files),
        )


def settings_paths(cwd: Path, user_home: Path) -> list[tuple[RuleSource, Path]]:
    """The standard settings files, least specific first."""
    return [
        (RuleSource.USER, user_home / ".claude" / "settings.json"),
        (RuleSource.PROJECT, cwd / ".claude" / "settings.json"),
        (RuleSource.LOCAL, cwd / ".claude" / "settings.local.json"),
    ]


FOLDER_SOURCES = (RuleSource.PROJECT, RuleSource.LOCAL)
"""The sources of the files a folder carries itself (``.claude/settings*.json``)."""


def load_settings(
    cwd: str | os.PathLike[str],
    *,
    user_home: str | os.PathLike[str] | None = None,
    extra_files: Sequence[str | os.PathLike[str]] = (),
    folder_grants: bool = True,
    sources: Sequence[RuleSource] | None = None,
) -> Settings:
    """Read the standard settings files of ``cwd`` plus ``extra_files`` (flag settings).

    Standard files that do not exist are skipped; an ``extra_files`` entry that does not
    exist is an error (it was asked for by name). ``folder_grants=False`` takes only what
    the folder's own files restrict (:meth:`Settings.restricting`; see
    :mod:`~fsm_agent.runtime.folder_trust`); ``sources``: only the standard files of these
    sources (and no ``extra_files``).

    Raises:
        ConfigError: a file is not JSON, or a key has the wrong type (file and JSON path named).
    """
    root = Path(cwd).resolve()
    home = Path(user_home) if user_home is not None else Path.home()
    found = [
        (source, path)
        for source, path in settings_paths(root, home)
        if (sources is None or source in sources) and path.is_file()
    ]
    for extra in extra_files if sources is None else ():
        path = Path(extra)
        _require_file(path)
        found.append((RuleSource.FLAG, path))
    settings = Settings()
    for source, path in found:
        read = _from_object(_read_json(path), source, path, root)
        if not folder_grants and source in FOLDER_SOURCES:
            read = read.restricting()
        settings = settings.merged(read)
    return settings


def load_settings_file(
    path: str | os.PathLike[str], *, cwd: str | os.PathLike[str] | None = None
) -> Settings:
    """One settings file, as flag settings (``--settings FILE``)."""
    file = Path(path)
    _require_file(file)
    return _from_object(_read_json(file), RuleSource.FLAG, file, Path(cwd or Path.cwd()).resolve())


def _require_file(path: Path) -> None:
    """Refuse a settings file that is not one, saying whether it is a folder or missing."""
    if not path.is_file():
        what = "is a folder, not a file" if path.is_dir() else "does not exist"
        raise ConfigError(f"settings file {path} {what}")


def _read_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"settings file {path} cannot be read: {exc}") from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"settings file {path} is not valid JSON: {exc.msg} at line {exc.lineno}, "
            f"column {exc.colno}"
        ) from exc


def _wrong(path: Path, where: str, expected: str, value: object) -> ConfigError:
    return ConfigError(
        f"settings file {path}: {where}: expected {expected}, got {type(value).__name__} "
        f"{json.dumps(value)[:60]}"
    )


def _from_object(data: Any, source: RuleSource, path: Path, cwd: Path) -> Settings:
    if not isinstance(data, Mapping):
        raise _wrong(path, "$", "an object", data)
    permissions = data.get("permissions", {})
    if not isinstance(permissions, Mapping):
        raise _wrong(path, "$.permissions", "an object", permissions)
    rules: list[Rule] = []
    for key, behavior in (
        ("deny", RuleBehavior.DENY),
        ("ask", RuleBehavior.ASK),
        ("allow", RuleBehavior.ALLOW),
    ):
        for index, text in enumerate(_strings(permissions, key, path)):
            try:
                rules.append(parse_rule(text, behavior, source, origin=str(path)))
            except ConfigError as exc:
                raise ConfigError(f"{exc} (at $.permissions.{key}[{index}])") from exc
    mode_value = permissions.get("defaultMode")
    mode: PermissionMode | None = None
    if mode_value is not None:
        if mode_value not in _MODES:
            raise ConfigError(
                f"settings file {path}: $.permissions.defaultMode: {mode_value!r} is not a "
                f"mode (one of: {', '.join(_MODES)})"
            )
        mode = _MODES[mode_value]
    directories = tuple(
        (cwd / Path(raw).expanduser()).resolve()
        for raw in _strings(permissions, "additionalDirectories", path)
    )
    hooks_value = data.get("hooks")
    hooks: tuple[HookSettings, ...] = ()
    if hooks_value is not None:
        if not isinstance(hooks_value, Mapping):
            raise _wrong(path, "$.hooks", "an object", hooks_value)
        hooks = (HookSettings(source=source.value, path=path, value=hooks_value),)
    return Settings(
        rules=tuple(rules),
        default_mode=mode,
        additional_directories=directories,
        hooks=hooks,
        files=(SettingsFile(source=source, path=path, raw=data),),
    )


def _strings(permissions: Mapping[str, Any], key: str, path: Path) -> list[str]:
    value = permissions.get(key, [])
    if not isinstance(value, list):
        raise _wrong(path, f"$.permissions.{key}", "an array of strings", value)
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise _wrong(path, f"$.permissions.{key}[{index}]", "a string", item)
    return value
