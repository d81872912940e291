"""Places outside the project whose files run code later: they are protected like ``.bashrc``.

SPEC §9.3 protects a short list of names (``.git``, ``.claude``, ``.gitconfig``, the shell
start-up files). Each is a way for one write to make code run later, unasked: the next ``git``
runs ``core.fsmonitor``, the next shell sources ``.bashrc``. The same holds of other places a
program reads its start-up code or its settings from, and a write to them is as much a way out
of the permission chain as a write to ``.bashrc``. They are protected here too, as the names
are, in every mode (a safety check: bypassPermissions still asks):

* git's own global settings file in the XDG layout, ``~/.config/git/config`` (the same file as
  ``~/.gitconfig``), and the system's, ``/etc/gitconfig``;
* the fish shell's start-up folder ``~/.config/fish``, ``~/.bashrc.d`` (which the ``.bashrc``
  of some distributions sources), the variables ``~/.config/environment.d`` gives every user
  service, and the system's shell start-up files (``/etc/profile``, ``/etc/profile.d/``,
  ``/etc/bash.bashrc``, ``/etc/zsh/`` …);
* what starts code at login or on a schedule: ``~/.config/systemd``, ``~/.config/autostart``,
  ``~/Library/LaunchAgents``, ``/Library/LaunchDaemons``, ``/etc/cron*``, ``/var/spool/cron``,
  ``/etc/systemd``, ``/etc/init.d``, ``/etc/rc.local``;
* what grants a login or a privilege, or loads code into every process: ``.ssh`` (its
  ``authorized_keys`` lets anyone holding the key in; its ``config`` runs ``ProxyCommand``),
  ``/etc/ssh``, ``/etc/sudoers*``, ``/etc/pam.d``, ``/etc/ld.so.preload``, ``/etc/ld.so.conf*``;
* an editor's, a terminal multiplexer's or a debugger's start-up files (``.vimrc``, ``.vim/``,
  ``~/.config/nvim``, ``~/.config/vim``, ``.emacs``, ``.emacs.d/``, ``~/.config/emacs``,
  ``.tmux.conf``, ``.gdbinit``, ``~/.config/gdb``, ``.lldbinit``, ``.pdbrc``), Mercurial's
  settings, whose hooks run commands (``.hg/``, ``.hgrc``, ``~/.config/hg``), and
  tools' settings that name a command they run when next used: ``.aws/config``
  (``credential_process``), ``.kube/config`` (an exec plugin), ``.docker/config.json``
  (``credsStore``), ``.cargo/config.toml`` (``build.rustc-wrapper``), ``.gradle/init.d``,
  ``.gnupg/gpg-agent.conf`` (``pinentry-program``), ``.ipython/`` (its start-up scripts);
* a virtual environment's activation scripts (``.venv/bin/activate``, sourced into the user's
  shell);
* Python's start-up hooks: a ``.pth`` file (whose ``import`` lines run at every interpreter
  start) and the ``sitecustomize`` / ``usercustomize`` module (``.py``, ``.pyc``, an extension
  module or a package folder) in a ``site-packages`` or ``dist-packages`` folder (a project's
  virtual environment included).

System places count only from the root of the file system (a project's ``rootfs/etc/profile.d``
is a project file); the others wherever they are (a working folder may be a home folder).
A tree deleted or changed whole (``rm -rf``, ``chmod -R``) that holds one of these places asks
as a command naming it does, but for a virtual environment's own (``rm -rf .venv`` deletes its
``.pth`` files and activation scripts: a build's output, not a start-up file named).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Final

STARTUP_DIRS: Final = frozenset(
    {".ssh", ".bashrc.d", ".vim", ".emacs.d", ".ipython", ".hg"} | {".jupyter", ".hammerspoon"}
)
"""Folder names protected wherever they are, beside SPEC §9.3's (Jupyter's settings are Python
it runs at start-up, Hammerspoon's Lua)."""

STARTUP_FILES: Final = frozenset(
    {".vimrc", ".gvimrc", ".exrc", ".emacs", ".tmux.conf", ".gdbinit", ".lldbinit", ".pdbrc"}
    | {".hgrc", ".screenrc", ".wezterm.lua", ".direnvrc"}
    | {".npmrc", ".yarnrc", ".yarnrc.yml", ".bunfig.toml"}
    | {".rprofile", ".renviron", ".irbrc", ".pryrc", ".sqliterc", ".psqlrc", ".perldb"}
    | {".xinitrc", ".xprofile", ".xsession", ".xsessionrc"}
)
"""File names protected wherever they are, beside SPEC §9.3's: an editor's, a terminal's, a
terminal multiplexer's or a debugger's start-up commands (``:!``, ``run-shell``, ``shell``,
pdb's Python lines, WezTerm's Lua), what ``direnv`` sources before every ``.envrc``,
Mercurial's settings (whose ``[hooks]`` run commands, as ``.git/hooks``), a package
manager's settings that name the program it runs (npm's ``script-shell`` and
``node-options``, Yarn's ``yarnPath``, Bun's ``preload``), an interpreter's or a database
shell's start-up code (R, Ruby, SQLite's and psql's ``.shell``/``\\!``, the Perl debugger),
and what an X session runs at login. Compared in lower case (``.Rprofile``)."""

_SYSTEM_PLACES: Final[dict[str, tuple[tuple[str, ...], ...]]] = {
    "etc": (
        ("gitconfig",),
        ("profile",),
        ("profile.d",),
        ("bash.bashrc",),
        ("bashrc",),
        ("zsh",),
        ("zshrc",),
        ("zshenv",),
        ("zprofile",),
        ("zlogin",),
        ("environment",),
        ("crontab",),
        ("anacrontab",),
        ("cron.d",),
        ("cron.hourly",),
        ("cron.daily",),
        ("cron.weekly",),
        ("cron.monthly",),
        ("systemd",),
        ("init.d",),
        ("rc.local",),
        ("xdg", "autostart"),
        ("ssh",),
        ("sudoers",),
        ("sudoers.d",),
        ("pam.d",),
        ("ld.so.preload",),
        ("ld.so.conf",),
        ("ld.so.conf.d",),
    ),
    "var": (("spool", "cron"),),
}
"""Places under the root folder, by their first folder: the path, or any path under it."""

_CONFIG_PLACES: Final = (
    ("git", "config"),
    ("hg",),
    ("nvim",),
    ("vim",),  # the XDG places of .vim, .emacs.d and .gdbinit
    ("emacs",),
    ("gdb",),
    ("tmux",),
    ("fish",),
    ("systemd",),
    ("autostart",),
    ("environment.d",),
    ("direnv",),  # direnvrc, sourced before every .envrc
    ("starship.toml",),  # a prompt's custom modules run a command at every prompt
    ("kitty",),  # a terminal's settings: the shell it starts, its start-up session
    ("wezterm",),
    ("alacritty",),
    ("powershell",),  # profile.ps1, run by every pwsh
    ("nushell",),  # config.nu, env.nu
    ("code", "user"),  # an editor's user settings: the interpreters and tasks it runs
)
_LIBRARY_PLACES: Final = (("launchagents",), ("launchdaemons",))
_PLACES_WITHIN: Final = {
    ".config": _CONFIG_PLACES,
    "library": _LIBRARY_PLACES,
    # Settings that name a command the tool runs when next used.
    ".aws": (("config",),),  # credential_process
    ".kube": (("config",),),  # an exec credential plugin
    ".docker": (("config.json",),),  # credsStore, credHelpers: docker-credential-NAME
    ".cargo": (("config.toml",), ("config",)),  # build.rustc-wrapper, a project's too
    # run by every build; gradle.properties gives its JVM an agent (-javaagent)
    ".gradle": (("init.d",), ("init.gradle",), ("init.gradle.kts",), ("gradle.properties",)),
    ".gnupg": (("gpg-agent.conf",), ("gpg.conf",)),  # pinentry-program
    ".julia": (("config",),),  # startup.jl
    ".lein": (("profiles.clj",),),  # Clojure run by every lein
    ".oh-my-zsh": (("custom",),),  # sourced by every zsh
}
"""Places under a folder of these names wherever it is: the path, or any path under it.
``.config`` is XDG's, ``Library`` macOS's (where ``launchd`` finds the jobs it starts); the
others are tools' own folders."""

_SITE_FOLDERS: Final = frozenset({"site-packages", "dist-packages"})
_SITE_HOOKS: Final = frozenset({"sitecustomize", "usercustomize"})
"""Modules Python imports at start-up from its site folders, in any form it imports: a
``.py`` file, a ``.pyc`` with no source, an extension module (``sitecustomize.so``) or a
package (``sitecustomize/__init__.py``)."""

_ACTIVATION_SCRIPTS: Final = frozenset(
    {"activate", "activate.fish", "activate.csh", "activate.nu", "activate.ps1", "activate.bat"}
)
"""A virtual environment's scripts a shell sources (``source .venv/bin/activate``): code run in
the user's own shell, as a ``.bashrc`` is; ``Scripts`` is their folder on Windows."""
_SCRIPT_FOLDERS: Final = frozenset({"bin", "scripts"})

_ROOTS: Final = frozenset({"/", "//", ""})
"""The first component of an absolute path (``//`` is a root of its own to ``pathlib``; a
path split on its separators begins with ``""``)."""

WITHIN_ANCHORS: Final = frozenset(_PLACES_WITHIN)
"""The folder names a place of :func:`reached_place` other than a system one begins with."""


def startup_place(parts: Sequence[str]) -> bool:
    """Whether a path of the lower-case components ``parts`` (absolute: the first is ``/``, or
    ``""`` for a path split on its separators) is one of the places above or lies in one."""
    if reached_place(parts):
        return True
    if len(parts) > 1 and parts[-1] in _ACTIVATION_SCRIPTS and parts[-2] in _SCRIPT_FOLDERS:
        return True
    if len(parts) > 1 and parts[-2] in _SITE_FOLDERS and parts[-1].endswith(".pth"):
        return True
    return any(
        parts[index - 1] in _SITE_FOLDERS and parts[index].partition(".")[0] in _SITE_HOOKS
        for index in range(1, len(parts))
    )


def reached_place(parts: Sequence[str]) -> bool:
    """:func:`startup_place`, less a virtual environment's own places (its activation scripts,
    a ``.pth`` or site hook in its ``site-packages``): a tree deleted or changed whole that
    holds those is a build's output (``rm -rf .venv``), while one that holds
    ``.config/git/config`` or ``/etc/cron.d`` (``rm -rf ~/.config``, ``chmod -R 777 /var/spool``)
    changes where code starts as much as a command naming it."""
    if len(parts) > 2 and parts[0] in _ROOTS:
        places = _SYSTEM_PLACES.get(parts[1])
        if places is not None and _begins_with(parts, 2, places):
            return True
    if WITHIN_ANCHORS.isdisjoint(parts):
        return False
    for index, part in enumerate(parts):
        within = _PLACES_WITHIN.get(part)
        if within is not None and _begins_with(parts, index + 1, within):
            return True
    return False


def watched_folder(parts: Sequence[str]) -> bool:
    """Whether a folder of the lower-case components ``parts`` (absolute) may hold a place of
    :func:`reached_place` at any depth: the root, one of its system folders, or a folder
    inside an anchor (``.config``, ``.aws``...). A folder that is not may still hold an
    anchor, which a walk finds by its name (:data:`WITHIN_ANCHORS`)."""
    if len(parts) <= 2 and parts[:1] and parts[0] in _ROOTS:
        return len(parts) == 1 or parts[1] in _SYSTEM_PLACES
    return not WITHIN_ANCHORS.isdisjoint(parts) or (
        len(parts) > 2 and parts[0] in _ROOTS and parts[1] in _SYSTEM_PLACES
    )


def _begins_with(parts: Sequence[str], start: int, places: tuple[tuple[str, ...], ...]) -> bool:
    """Whether ``parts`` from ``start`` on begin with one of ``places``."""
    return any(tuple(parts[start : start + len(place)]) == place for place in places)


def holds_place(parts: Sequence[str]) -> bool:
    """Whether a folder of the lower-case components ``parts`` (absolute, as for
    :func:`startup_place`) may hold one of the places: ``/etc``, ``~/.config``,
    ``~/.config/git``, a ``site-packages`` folder. A folder carried there whole writes them."""
    if len(parts) > 1 and parts[0] in _ROOTS:
        places = _SYSTEM_PLACES.get(parts[1])
        if places is not None and _leads_into(parts, 2, places):
            return True
    if parts and parts[-1] in _SITE_FOLDERS:
        return True
    return any(
        part in _PLACES_WITHIN and _leads_into(parts, index + 1, _PLACES_WITHIN[part])
        for index, part in enumerate(parts)
    )


def _leads_into(parts: Sequence[str], start: int, places: tuple[tuple[str, ...], ...]) -> bool:
    """Whether ``parts`` from ``start`` on are the beginning of one of ``places`` but not the
    whole of it (nothing: the folder the places are in)."""
    rest = tuple(parts[start:])
    return any(len(rest) < len(place) and place[: len(rest)] == rest for place in places)


def _alternatives(places: Iterable[tuple[str, ...]]) -> str:
    return "|".join(re.escape("/".join(place)) for place in places)


SPELLINGS: Final = (
    *(rf"/{root}/(?:{_alternatives(places)})" for root, places in _SYSTEM_PLACES.items()),
    *(rf"{re.escape(name)}/(?:{_alternatives(places)})" for name, places in _PLACES_WITHIN.items()),
    r"(?:site|dist)-packages/[^/\s'\"]*\.pth",
    r"(?:site|user)customize\.py",
    r"(?:bin|scripts)/activate(?:\.\w+)?",
    *map(re.escape, sorted(STARTUP_DIRS | STARTUP_FILES)),
)
"""The places as a text may spell them (``~/.config/git/config``, ``/etc/profile.d``,
``site-packages/x.pth``), regular expressions to be matched case-insensitively and standing
alone (:data:`~fsm_agent.toolbox.code_names.PROTECTED_NAME`)."""
