"""Whether a folder's own settings files may widen what the agent does.

A repository can carry ``.claude/settings.json`` and ``.claude/settings.local.json``: hooks
that run commands as the session starts, allow rules (``Bash(*)``), a default mode, extra
folders. Someone who clones a repository and runs ``fsm-agent run`` in it has agreed to none
of that. So the command line applies what those files *grant* only once the person trusts
them (:func:`settings_for_folder`): at a terminal it shows what they grant and asks; "always"
is remembered for this folder and these exact bytes, the files inside the folder its hook
commands name included, so a change to any of them (a ``git pull`` bringing a new hook, or
changing the script a hook runs) asks again. Without a terminal, and without ``--trust-folder``,
what they grant is left out, with a warning. What they *restrict* (deny and ask rules, a plan
or dontAsk mode) applies either way, trusted or not.

The library itself trusts what its caller passes: ``Agent(settings=True)`` applies the files
as they are.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

from fsm_agent.core.permission_rules import RuleBehavior
from fsm_agent.errors import ConfigError
from fsm_agent.runtime.settings import FOLDER_SOURCES, Settings, load_settings

TRUST_FILE_NAME = "trusted-folders.json"
"""The file, in the user's state folder, that remembers trusted folders."""

Ask = Callable[[Path, Sequence[str]], str]
"""Shows what a folder's settings grant and returns the answer: ``once``, ``always`` or
anything else for no."""


def what_they_grant(settings: Settings) -> list[str]:
    """One line per thing ``settings`` grant (allow rules, hook commands, a mode that allows
    more, extra folders); empty when they only restrict."""
    granted = [
        f"allow rule {rule.text}" for rule in settings.rules if rule.behavior is RuleBehavior.ALLOW
    ]
    for hooks in settings.hooks:
        for event, groups in hooks.value.items():
            granted += [f"{event} hook: {command}" for command in _commands(groups)]
    mode = settings.default_mode
    if mode is not None and settings.restricting().default_mode is None:
        granted.append(f"default mode {mode.value}")
    granted += [f"extra folder {folder}" for folder in settings.additional_directories]
    return granted


def _commands(groups: object) -> list[str]:
    """The commands of a ``hooks`` event's groups (anything else shown as it is written)."""
    if not isinstance(groups, list):
        return [json.dumps(groups)[:200]]
    found = []
    for group in groups:
        hooks = group.get("hooks") if isinstance(group, dict) else None
        for hook in hooks if isinstance(hooks, list) else [group]:
            command = hook.get("command") if isinstance(hook, dict) else None
            found.append(command if isinstance(command, str) else json.dumps(hook)[:200])
    return found


def digest_of(files: Sequence[Path]) -> str:
    """What trust is given to: each file's name and bytes (read in pieces: a hook may name a
    large file of the repository)."""
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode() + b"\0")
        with path.open("rb") as file:
            while piece := file.read(1 << 20):
                digest.update(piece)
        digest.update(b"\0")
    return digest.hexdigest()


_PROJECT_DIR = re.compile(r"^\$(\{CLAUDE_PROJECT_DIR\}|CLAUDE_PROJECT_DIR)(?=/|$)")
"""How a hook command names the folder (Claude Code sets ``CLAUDE_PROJECT_DIR`` for hooks)."""


_RUNNERS_FILES: Final[dict[str, tuple[str, ...]]] = {
    **dict.fromkeys(("npm", "npx", "yarn", "pnpm", "bun", "corepack"), ("package.json",)),
    "make": ("GNUmakefile", "makefile", "Makefile"),
    "just": ("justfile", "Justfile", ".justfile"),
    "task": ("Taskfile.yml", "Taskfile.yaml"),
    "rake": ("Rakefile",),
    "invoke": ("tasks.py",),
    "nox": ("noxfile.py",),
    "tox": ("tox.ini", "pyproject.toml"),
    **dict.fromkeys(("uv", "poetry", "hatch", "pdm"), ("pyproject.toml",)),
    "pre-commit": (".pre-commit-config.yaml",),
    "cargo": ("Cargo.toml", "build.rs"),
    **dict.fromkeys(("mvn", "mvnw"), ("pom.xml",)),
    **dict.fromkeys(
        ("gradle", "gradlew"),
        ("build.gradle", "build.gradle.kts", "settings.gradle", "settings.gradle.kts"),
    ),
    "bundle": ("Gemfile",),
    "composer": ("composer.json",),
}
"""Programs a hook may run that take the code they run from files of the folder without the
command naming them (``npm run setup`` runs what ``package.json`` says), and those files, at
the folder's top: trust covers them as it covers a script the command names."""

_PYTHONS: Final = frozenset({"python", "python3"})
_RUNNING_IN_ENVIRONMENT: Final = frozenset({"uv", "poetry", "hatch", "pdm", "pipenv"})
"""Runners whose ``run`` subcommand runs another program (``uv run nox``)."""


def files_hooks_run(folder: Path, settings: Settings) -> list[Path]:
    """The files inside ``folder`` that the hook commands of ``settings`` run: those they name
    (``./scripts/setup.sh``, ``python tools/hook.py``, ``"$CLAUDE_PROJECT_DIR"/x.sh``), those
    a runner they call reads its commands from (``npm run setup``: ``package.json``; see
    :data:`_RUNNERS_FILES`) and a module ``python -m`` runs from the folder. Trust covers their
    bytes too, so a script a ``git pull`` changes is asked about again."""
    from fsm_agent.core.shell_commands import analyse_command  # noqa: PLC0415 - lazy

    root = folder.resolve()
    found: dict[Path, None] = {}

    def add(name: str) -> None:
        # RuntimeError: ``~name`` of a user this machine does not know names no file
        with contextlib.suppress(OSError, ValueError, RuntimeError):
            path = Path(_PROJECT_DIR.sub(str(root), name)).expanduser()
            path = (root / path).resolve()
            if path.is_file() and path.is_relative_to(root):
                found[path] = None

    for hooks in settings.hooks:
        for groups in hooks.value.values():
            for command in _commands(groups):
                for part in analyse_command(command).parts:
                    for word in part.argv:
                        add(word)
                    for name in _files_read_as_code(part.argv):
                        add(name)
    return list(found)


def _files_read_as_code(argv: tuple[str, ...]) -> list[str]:
    """The folder's files a command takes code from without naming them (``argv`` after its
    wrappers): a runner's files, or the module ``python -m NAME`` runs."""
    program = Path(argv[0]).name if argv else ""
    if program in _PYTHONS and "-m" in argv[1:-1]:
        module = argv[argv.index("-m", 1) + 1].replace(".", "/")
        return [f"{module}.py", f"{module}/__main__.py", f"{module}/__init__.py"]
    files = list(_RUNNERS_FILES.get(program, ()))
    if program in _RUNNING_IN_ENVIRONMENT and argv[1:2] == ("run",):  # uv run nox
        files += _files_read_as_code(argv[2:])
    return files


class FolderTrust:
    """The folders (and the digests of their settings files) the user trusts.

    Args:
        path: the file that remembers them (default: :data:`TRUST_FILE_NAME` in the user's
            state folder, as traces are kept).
    """

    def __init__(self, path: Path | None = None) -> None:
        if path is None:
            import platformdirs  # noqa: PLC0415 - only a folder with settings files needs it

            path = platformdirs.user_state_path("fsm_agent") / TRUST_FILE_NAME
        self.path = path

    def _read(self) -> dict[str, str]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise ConfigError(
                f"the trusted-folders file {self.path} cannot be read: {exc}"
            ) from exc
        if not isinstance(data, dict) or not all(
            isinstance(key, str) and isinstance(value, str) for key, value in data.items()
        ):
            raise ConfigError(f"the trusted-folders file {self.path} is not an object of strings")
        return data

    def trusts(self, folder: Path, digest: str) -> bool:
        """Whether ``folder``'s settings files, as ``digest`` says they are now, are trusted."""
        return self._read().get(str(folder.resolve())) == digest

    def remember(self, folder: Path, digest: str) -> None:
        """Trust ``folder``'s settings files as they are now (written whole, or not at all)."""
        data = self._read()
        data[str(folder.resolve())] = digest
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle, name = tempfile.mkstemp(dir=self.path.parent, prefix=".trusted-")
        temporary = Path(name)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as file:
                json.dump(data, file, indent=1, sort_keys=True)
            temporary.replace(self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                temporary.unlink()
            raise


def settings_for_folder(
    cwd: Path,
    *,
    extra_files: Sequence[str | os.PathLike[str]] = (),
    trust_flag: bool = False,
    ask: Ask | None = None,
    warn: Callable[[str], None],
    trust: FolderTrust | None = None,
) -> Settings:
    """The settings a command applies in ``cwd``: the user's, the folder's and ``extra_files``,
    the folder's grants only if trusted (``trust_flag``, remembered, or ``ask``'s answer);
    otherwise ``warn`` is told what was left out.

    Raises:
        ConfigError: a settings file is malformed (whether trusted or not), or the
            trusted-folders file cannot be read.
    """
    whole = load_settings(cwd, extra_files=extra_files)
    files = [file.path for file in whole.files if file.source in FOLDER_SOURCES]
    theirs = load_settings(cwd, sources=FOLDER_SOURCES)
    granted = what_they_grant(theirs) if files else []
    if not granted or trust_flag:
        return whole
    trust = trust or FolderTrust()
    scripts = files_hooks_run(cwd, theirs)
    digest = digest_of([*files, *scripts])
    granted += [
        f"(and the bytes of {path.relative_to(cwd.resolve())}, which a hook runs)"
        for path in scripts
    ]
    if trust.trusts(cwd, digest):
        return whole
    answer = ask(cwd, granted) if ask is not None else None
    if answer in {"once", "always"}:
        if answer == "always":
            trust.remember(cwd, digest)
        return whole
    names = ", ".join(str(path.relative_to(cwd)) for path in files)
    how = "" if ask is not None else " Trust it at a terminal, or pass --trust-folder."
    warn(
        f"{names} of this folder grant{'s' if len(files) == 1 else ''} what was not applied, "
        f"since the folder is not trusted: {'; '.join(granted)}. Its deny and ask rules "
        f"apply.{how}"
    )
    return load_settings(cwd, extra_files=extra_files, folder_grants=False)
