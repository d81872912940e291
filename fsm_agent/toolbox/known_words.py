"""The words a command's shell computes that can be told before it runs (SPEC §9.3 step 1g).

A word the shell computes may name any path, so the permission checks count it as one that
may be protected, or outside the working folder. Some are told beforehand: a glob, matched in
the one folder the command can be in as Bash would match it
(:mod:`~fsm_agent.toolbox.glob_matches`); ``$HOME`` read at the start of a word, the home
folder the tool's shell inherits; and a variable read whole (``"$f"``) that a ``for`` loop
gives the words of its list (globs matched too), or one assignment of the command gives plain
text or the new folder ``mktemp -d`` makes. A part with such words put in is judged as the
command that names each path would be: ``rm -rf build *.egg-info``, ``rm -rf
"$HOME/.cache/pip"``, ``for f in src/*.pyc; do rm "$f"; done`` and ``d=$(mktemp -d); …; rm
-rf "$d"`` run in bypass mode, and ``sed -i s/a/b/ src/*.py`` in acceptEdits.
"""

from __future__ import annotations

import os
from pathlib import Path

import attrs

from fsm_agent.core.shell_commands import MADE_FOLDER, CommandAnalysis, CommandPart, Redirect
from fsm_agent.toolbox.glob_matches import MAX_MATCHES, glob_matches, matching_as_written
from fsm_agent.toolbox.paths import fresh_folder, places_set, sets_tmpdir
from fsm_agent.toolbox.placed_files import places_into_last

__all__ = ["KnownWords"]


@attrs.frozen
class KnownWords:
    """What can be told of a command's computed words (see the module's text): its globs,
    where the command can be in one folder only and leaves the shell's matching as it is; its
    words reading ``$HOME``, where it sets no ``HOME``; its loops' and one-time assignments'
    variables, read whole, where nothing else sets them. Words a wrapper's shell parses are
    told globs alone. A glob is matched once per check (:attr:`matched`)."""

    patterns: dict[str, str]
    folder: Path | None
    homes: dict[str, tuple[str, str]]
    home: str | None
    reads: dict[str, tuple[str, str]] = attrs.field(factory=dict)
    loops: dict[str, tuple[tuple[str, str | None], ...]] = attrs.field(factory=dict)
    settings: dict[str, str] = attrs.field(factory=dict)
    matched: dict[str, list[str] | None] = attrs.field(factory=dict, eq=False)
    """The matches of each pattern matched so far (:meth:`each_run` shares it)."""

    @classmethod
    def of(cls, analysis: CommandAnalysis, folders: list[Path]) -> KnownWords:
        """What can be told of ``analysis``'s words, its relative words starting from
        ``folders``."""
        matched = len(folders) == 1 and matching_as_written(analysis)
        home = os.environ.get("HOME") or None
        if home is not None and places_set(analysis):
            home = None
        return cls(
            patterns=dict(analysis.globs) if matched else {},
            folder=folders[0] if matched else None,
            homes=dict(analysis.homes) if home is not None else {},
            home=home,
            reads=dict(analysis.reads),
            # A read before the loop gets what the environment gives the name, if anything.
            loops={name: words for name, words in analysis.loops if name not in os.environ},
            settings={
                name: value
                for name, value in analysis.settings
                if name not in os.environ
                and not (value == MADE_FOLDER and sets_tmpdir(analysis.command))
            },
        )

    def put_in(self, part: CommandPart) -> CommandPart:
        """``part`` with each word that can be told replaced by what the shell makes of it
        (a glob matching no path left as written, as Bash does), its redirection targets too
        where one path is told (Bash refuses a glob target matching more). A word that cannot
        be told stays computed, and so does a last word matching more than one path for a
        program that puts its other operands into its last (``mv *.txt``): Bash sorts by the
        locale, and which path comes last would be a guess."""
        if part.fed or part.found_paths:
            return part
        if not (self.patterns or self.loops or self.settings or self.homes):
            return part
        redirects = self.redirects_told(part).redirects
        if not part.expanded:
            return attrs.evolve(part, redirects=redirects)
        computed = frozenset(part.expanded)
        last = len(part.argv) - 1
        argv: list[str] = []
        expanded: list[int] = []
        for index, word in enumerate(part.argv):
            told = self._told(part, word) if index in computed and index > 0 else None
            if told is not None and index == last and len(told) > 1:
                told = None if places_into_last(part.argv) else told
            if told is None:
                if index in computed:
                    expanded.append(len(argv))
                argv.append(word)
            else:
                argv += told or [word]
        return attrs.evolve(
            part,
            argv=tuple(argv),
            text=" ".join(argv),
            expanded=tuple(expanded),
            redirects=redirects,
        )

    def redirects_told(self, part: CommandPart) -> CommandPart:
        """``part`` with its redirection targets told (its words as they are: those of a
        program that only prints are no paths it writes, but its redirections are)."""
        if not any(redirect.expanded for redirect in part.redirects):
            return part
        told = tuple(self._redirect_told(part, redirect) for redirect in part.redirects)
        return attrs.evolve(part, redirects=told)

    def _redirect_told(self, part: CommandPart, redirect: Redirect) -> Redirect:
        """``redirect`` with its target told, where the shell computes it and one path (or a
        glob matching none, the target as written) can be told."""
        if not redirect.expanded or redirect.operator.endswith(("<<", "&")):
            return redirect
        told = self._told(part, redirect.target)
        if told is None or len(told) > 1:
            return redirect
        return attrs.evolve(redirect, target=told[0] if told else redirect.target, expanded=False)

    def sets_only_told(self, part: CommandPart) -> bool:
        """Whether ``part`` only sets variables whose every read is told (a loop's, or one
        assignment's: ``for f in …``, ``d=build``), which changes nothing else."""
        names = [text.partition("=")[0] for text in part.assignments]
        return (
            not part.argv
            and not part.redirects
            and bool(names)
            and all(name in self.loops or name in self.settings for name in names)
        )

    def each_run(self, part: CommandPart, *, words: bool = True) -> list[CommandPart]:
        """``part`` with its words told (:meth:`put_in`; with ``words=False`` its
        redirections alone, :meth:`redirects_told`), once for each word a loop's variable it
        reads takes: the loop runs it that many times (``for f in *.py; do cp "$f"
        "$f.bak"; done`` copies each file to its own name, not all into the last), at most
        :data:`~fsm_agent.toolbox.glob_matches.MAX_MATCHES` of them; else once, every word
        in."""
        tell = self.put_in if words else self.redirects_told
        targets = [redirect.target for redirect in part.redirects if redirect.expanded]
        outer = () if part.wrappers else (*part.argv, *targets)
        names = {self.reads[word][0] for word in outer if word in self.reads}
        looped = [name for name in names if name in self.loops]
        if len(looped) != 1:
            return [tell(part)]
        name = looped[0]
        values = self._looped(self.loops[name])
        if values is None or not values or len(values) > MAX_MATCHES:
            return [tell(part)]
        runs = []
        for value in dict.fromkeys(values):
            once = attrs.evolve(self, loops={**self.loops, name: ((value, None),)})
            runs.append(once.put_in(part) if words else once.redirects_told(part))
        return runs

    def _told(self, part: CommandPart, word: str) -> list[str] | None:
        """The words ``word``, of ``part``, becomes, when it can be told."""
        # A script a wrapper's shell parses (`bash -c '… "$d" …'`) reads its own variables.
        name, rest = self.reads.get(word, ("", "")) if not part.wrappers else ("", "")
        if name in self.loops:
            looped = self._looped(self.loops[name])
            return None if looped is None else [value + rest for value in looped]
        if name in self.settings:
            value = self.settings[name]
            if value == MADE_FOLDER:
                value = fresh_folder()
            return None if value.startswith("$") else [value + rest]
        around = self.homes.get(word)
        if around is not None and self.home is not None and not part.wrappers:
            return [around[0] + self.home + around[1]]
        pattern = self.patterns.get(word)
        return self._matches(pattern) if pattern is not None else None

    def _matches(self, pattern: str) -> list[str] | None:
        """:func:`~fsm_agent.toolbox.glob_matches.glob_matches` in :attr:`folder`, once per
        pattern; None without the one folder."""
        if self.folder is None:
            return None
        if pattern not in self.matched:
            self.matched[pattern] = glob_matches(pattern, self.folder)
        found = self.matched[pattern]
        return None if found is None else list(found)

    def _looped(self, words: tuple[tuple[str, str | None], ...]) -> list[str] | None:
        """Every word a loop's variable takes: its list, each glob matched."""
        taken: list[str] = []
        for value, pattern in words:
            if pattern is None:
                taken.append(value)
                continue
            matches = self._matches(pattern)
            if matches is None:
                return None
            taken += matches or [value]
        return taken
