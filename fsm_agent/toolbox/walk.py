"""Which files the searching tools (Glob, Grep) visit.

A walk lists files under a folder in path order and leaves out what a person would not want
searched: version-control internals, whatever the ``.gitignore`` files of the working
directory ignore (the rules of each ``.gitignore`` apply below its own folder, a deeper file
overriding a shallower one, as git does), the folders the context hides (the run's own traces),
and anything that resolves outside the working directory. Ignored folders are pruned, not
walked and filtered, so a ``.venv`` or ``node_modules`` costs nothing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

import pathspec

from fsm_agent.runtime.tool import ToolContext
from fsm_agent.toolbox.paths import PathOutsideWorkingDirectory, resolve_in_cwd

SKIPPED_DIRS = frozenset({".git", ".hg", ".svn"})
"""Version-control internals: never listed (nobody searches object files)."""

IGNORE_FILE = ".gitignore"


class _IgnoreRules:
    """The ``.gitignore`` files that apply to one folder, shallowest first."""

    def __init__(self, layers: tuple[tuple[Path, pathspec.GitIgnoreSpec], ...] = ()) -> None:
        self.layers = layers

    def below(self, folder: Path) -> _IgnoreRules:
        """The rules inside ``folder``: these, plus ``folder``'s own ``.gitignore``."""
        spec = _read_ignore_file(folder / IGNORE_FILE)
        return self if spec is None else _IgnoreRules((*self.layers, (folder, spec)))

    def ignores(self, path: Path, *, is_dir: bool) -> bool:
        """Whether ``path`` is ignored; the deepest file with a matching pattern decides."""
        verdict = False
        for folder, spec in self.layers:
            relative = path.relative_to(folder).as_posix() + ("/" if is_dir else "")
            include = spec.check_file(relative).include
            if include is not None:
                verdict = include
        return verdict


def _read_ignore_file(path: Path) -> pathspec.GitIgnoreSpec | None:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    spec = pathspec.GitIgnoreSpec.from_lines(text.splitlines())
    return spec if len(spec) else None


def _rules_for(folder: Path, ctx: ToolContext) -> _IgnoreRules:
    """The rules in force in ``folder``: every ``.gitignore`` from the working directory down."""
    root = ctx.cwd.resolve()
    rules = _IgnoreRules()
    if not folder.is_relative_to(root):
        return rules.below(folder)
    rules = rules.below(root)
    current = root
    for part in folder.relative_to(root).parts:
        current /= part
        rules = rules.below(current)
    return rules


def is_hidden(path: Path, ctx: ToolContext) -> bool:
    """Whether ``path`` (resolved) lies in one of the context's hidden folders (the run's
    traces): no built-in tool lists or reads it."""
    return any(path == hidden or path.is_relative_to(hidden) for hidden in ctx.hidden_paths)


def walk_files(top: Path, ctx: ToolContext, *, max_depth: int | None = None) -> Iterator[Path]:
    """Files under ``top`` (an absolute folder), in path order, that a search may visit.

    Args:
        top: the folder to walk (already resolved inside the working directory).
        ctx: the tool context: its ``cwd`` holds the ``.gitignore`` files, its
            ``hidden_paths`` the folders never listed.
        max_depth: how many folder levels below ``top`` to enter (None: all).
    """
    if is_hidden(top.resolve(), ctx):
        return
    stack: list[tuple[Path, _IgnoreRules, int]] = [(top, _rules_for(top.resolve(), ctx), 0)]
    while stack:
        folder, rules, depth = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
        except OSError:
            continue
        subfolders: list[tuple[Path, _IgnoreRules, int]] = []
        for entry in entries:
            path = Path(entry.path)
            try:
                is_dir = entry.is_dir()
            except OSError:
                continue
            if is_dir and entry.name in SKIPPED_DIRS:
                continue
            if rules.ignores(path, is_dir=is_dir):
                continue
            try:
                resolved = resolve_in_cwd(str(path), ctx)  # a symlink may point outside
            except PathOutsideWorkingDirectory:
                continue
            if is_hidden(resolved, ctx):
                continue
            if is_dir:
                # A linked folder is not followed (no cycles); depth bounds a shallow glob.
                if not entry.is_symlink() and (max_depth is None or depth < max_depth):
                    subfolders.append((path, rules.below(path), depth + 1))
            elif resolved.is_file():
                yield path
        # Depth first in path order: files of a folder before its subfolders' files.
        stack.extend(reversed(subfolders))


@lru_cache(maxsize=64)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """A regex matching the relative POSIX paths a glob pattern names.

    ``**`` spans any number of folders (none included), ``*`` and ``?`` stay within one
    path segment, ``[...]`` is a character class, as in :meth:`pathlib.Path.glob`.
    """
    out: list[str] = []
    segments = pattern.strip("/").split("/")
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            out.append(".*" if last else "(?:[^/]+/)*")
            continue
        out.append(_segment_regex(segment))
        if not last:
            out.append("/")
    return re.compile("".join(out) + r"\Z")


def _segment_regex(segment: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(segment):
        char = segment[index]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end = segment.find("]", index + 2)
            if end == -1:
                out.append(re.escape(char))
            else:
                body = segment[index + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body.replace(chr(92), chr(92) * 2)}]")
                index = end
        else:
            out.append(re.escape(char))
        index += 1
    return "".join(out)
