"""What content rules and the mode say about one call (SPEC §9.3 step 1c, the tool's part).

The permission chain (``runtime/permissions.py``) handles whole-tool rules, hooks and modes; this
module looks inside a call: the parts of a Bash command, the resolved path of a file tool. Its
answer is a :class:`Verdict`, which the chain turns into a decision following SPEC §9.3.

* **Bash**: the command is taken apart with ``analyse_command``. A deny rule matching any part
  (inside wrappers, substitutions, pipes; a program named by its path, ``/bin/rm``, by its
  name too, and git without its own options, ``git -C . push``, as ``git push``) denies; an
  ask rule matching any part asks, even in bypass mode; a command the parser cannot fully read
  asks. The shell commands other programs are given (``git -c core.pager=...``,
  ``tar --to-command``) are parts too. Code given in the command in another language
  (``python3 -c``, ``awk 'BEGIN{system(...)}'``, ``sed 'e ...'``: ``core/inline_code``) asks
  under any Bash deny or ask rule, even in bypass mode: the rule cannot read it; so do words
  ``xargs`` or ``find -exec`` give a program whose words decide what it runs
  (``xargs tar -xf a.tar``: ``core/fed_words``). Script files
  are not read: a rule sees command text, not files' code. The command is allowed only when
  every part is allowed by a rule, is read-only, or (in ``acceptEdits``) is a plain file
  operation on paths inside the working folder; a program a build variable names
  (``make CC=clang``: ``CommandPart.continued``) runs with words from a file, and needs no
  allow of its own. A part with ``VAR=`` prefixes, a redirection
  that writes, or a wrapper that changes who runs it (``sudo``) is never allowed by a rule.
* **File tools**: rules match the resolved path; the tool's own opinion (protected paths ask
  with a safety check; reads outside the working folder ask) comes after deny and ask rules
  and before allow rules, as in Claude Code's file-system checks.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, TypeAlias

import attrs

from fsm_agent.core.kinds import DecisionSource
from fsm_agent.core.permission_rules import (
    EDIT_FILE_TOOLS,
    FILE_TOOLS,
    READ_FILE_TOOLS,
    Rule,
    RuleBehavior,
    RuleSet,
    path_rule_matches,
    path_rule_may_match_under,
    shell_rule_matches,
)
from fsm_agent.runtime.tool import SAFETY_CHECK, PermissionCheck
from fsm_agent.toolbox.paths import (
    expand_home,
    holds_protected,
    is_protected,
    path_candidates,
    repository_top,
    resolved_under,
    word_bases,
    word_path,
)

if TYPE_CHECKING:
    # The shell parser and the read-only tables are loaded by the first Bash call, not by
    # ``from fsm_agent import Agent`` (issue 10: they are a good part of its import time).
    from fsm_agent.core.shell_commands import CommandAnalysis, CommandPart

VerdictBehavior: TypeAlias = Literal["allow", "deny", "ask", "passthrough"]


@attrs.frozen(kw_only=True)
class Verdict:
    """The content step's answer.

    Attributes:
        behavior: allow, deny, ask or passthrough (no opinion).
        source: what decided (a rule, the tool, a safety check, the mode).
        step: the SPEC §9.3 step it stands for (``1d``, ``1e``, ``1f``, ``1g``, ``3``).
        reason: why, in words.
        message: for the model or the user.
        rule: the rule that decided, when one did.
        immune: an ask that even ``bypassPermissions`` must not skip (steps 1e–1g).
        suggested_rules: rules that would allow this call, offered to "allow always".
    """

    behavior: VerdictBehavior
    source: DecisionSource = DecisionSource.TOOL
    step: str = "3"
    reason: str = ""
    message: str = ""
    rule: Rule | None = None
    immune: bool = False
    suggested_rules: tuple[str, ...] = ()


@attrs.frozen(kw_only=True)
class CallPlace:
    """Where a call acts: the folders that decide what is inside and what is outside."""

    cwd: Path
    home: Path
    additional_directories: tuple[Path, ...] = ()
    accept_edits: bool = False

    def inside(self, path: Path) -> bool:
        """Whether a resolved path is in the working folder or an additional directory."""
        return any(path.is_relative_to(root) for root in (self.cwd, *self.additional_directories))


def tool_verdict(check: PermissionCheck, *, requires_interaction: bool) -> Verdict:
    """The tool's own opinion as a verdict (SPEC §9.3 steps 1d, 1e, 1g, 3)."""
    why = check.message or check.reason
    if check.behavior == "deny":
        return Verdict(
            behavior="deny", step="1d", reason=why or "the tool refused", message=check.message
        )
    if check.behavior == "ask":
        if check.reason == SAFETY_CHECK:
            return Verdict(
                behavior="ask",
                source=DecisionSource.SAFETY_CHECK,
                step="1g",
                reason=why,
                message=check.message,
                immune=True,
            )
        if requires_interaction:
            why = why or "the tool needs a person"
            return Verdict(behavior="ask", step="1e", reason=why, immune=True)
        return Verdict(behavior="ask", reason=why or "the tool asks", message=check.message)
    if check.behavior == "allow":
        return Verdict(behavior="allow", reason=why or "the tool allows this call")
    return Verdict(behavior="passthrough", reason=why)


# --- file tools ---------------------------------------------------------------------------------


def path_verdict(
    tool_name: str,
    target: Path,
    check: PermissionCheck,
    rules: RuleSet,
    place: CallPlace,
    *,
    read_only: bool,
    requires_interaction: bool,
) -> Verdict:
    """Rules on the resolved path, then the tool's opinion, then allow rules and the mode."""
    case_sensitive = not _ignores_case(place.cwd)
    path = target.as_posix()

    def first(behavior: RuleBehavior) -> Rule | None:
        for rule in rules.content_rules(behavior, tool_name):
            assert rule.content is not None
            if path_rule_matches(
                rule.content,
                path,
                cwd=place.cwd.as_posix(),
                home=place.home.as_posix(),
                case_sensitive=case_sensitive,
            ):
                return rule
        return None

    denied = first(RuleBehavior.DENY)
    if denied is not None:
        return rule_verdict("deny", "1d", denied, f"{target} matches")
    asked = first(RuleBehavior.ASK)
    if asked is not None:
        return rule_verdict("ask", "1f", asked, f"{target} matches")
    own = tool_verdict(check, requires_interaction=requires_interaction)
    if own.behavior == "deny" or own.immune:
        return own
    allowed = first(RuleBehavior.ALLOW)
    if allowed is not None:
        return rule_verdict("allow", "3", allowed, f"{target} matches")
    if place.accept_edits and not read_only and place.inside(target):
        return Verdict(
            behavior="allow",
            source=DecisionSource.MODE,
            reason="acceptEdits mode: a file edit inside the working folder",
        )
    family = "Read" if read_only else "Edit"
    return attrs.evolve(own, suggested_rules=(f"{family}(//{_escape_path(path.lstrip('/'))})",))


def rule_verdict(behavior: VerdictBehavior, step: str, rule: Rule, what: str = "") -> Verdict:
    """What one rule decided: asks by a rule are bypass-immune (SPEC §9.3 steps 1b, 1f)."""
    verb = {"deny": "denied", "ask": "needs a question", "allow": "allowed"}[behavior]
    subject = f"{what} " if what else ""
    return Verdict(
        behavior=behavior,
        source=DecisionSource.RULE,
        step=step,
        reason=f"{subject}{rule.behavior.value} rule {rule.text} ({rule.where()}): {verb}",
        rule=rule,
        immune=behavior == "ask",
    )


def _escape_path(path: str) -> str:
    return re.sub(r"([\\*?\[\]()])", r"\\\1", path)


_CASE_CACHE: dict[Path, bool] = {}


def _ignores_case(folder: Path) -> bool:
    """Whether the file system holding ``folder`` ignores case (macOS and Windows defaults)."""
    cached = _CASE_CACHE.get(folder)
    if cached is None:
        swapped = folder.with_name(folder.name.swapcase())
        cached = swapped != folder and swapped.exists() and folder.samefile(swapped)
        _CASE_CACHE[folder] = cached
    return cached


# --- Bash ---------------------------------------------------------------------------------------

TRANSPARENT_WRAPPERS = frozenset({"timeout", "nice", "nohup", "time", "stdbuf", "command"})
"""Wrappers that change neither who runs the wrapped command nor what it is given: such a
wrapper part needs no rule of its own (the command it runs is a part, checked by itself)."""

ACCEPT_EDITS_COMMANDS = {
    "mkdir": frozenset("pv") | {"--parents", "--verbose"},
    "touch": frozenset("c") | {"--no-create"},
    "rm": frozenset("rRfvd") | {"--recursive", "--force", "--verbose", "--dir"},
    "rmdir": frozenset("pv") | {"--parents", "--verbose"},
    "mv": frozenset("fnv") | {"--force", "--no-clobber", "--verbose"},
    "cp": frozenset("rRfnvpa") | {"--recursive", "--force", "--no-clobber", "--verbose"},
    "sed": frozenset("i") | {"--in-place"},
}
"""SPEC §9.3: in acceptEdits these run without a question when every path is inside the
working folder; only the options listed (harmless ones) are accepted."""

_SED_SUBSTITUTION = re.compile(r"s([/|#,:])(?:(?!\1).)*\1(?:(?!\1).)*\1[gI0-9]*")
_QUIET_REDIRECTS = frozenset({"/dev/null"})


def shell_verdict(
    command: str, check: PermissionCheck, rules: RuleSet, place: CallPlace
) -> Verdict:
    """Rules on every part of a Bash command (SPEC §9.3 Bash checkPermissions)."""
    from fsm_agent.core.shell_commands import analyse_command  # noqa: PLC0415 - lazy, see above
    from fsm_agent.toolbox.bash import runs_git  # noqa: PLC0415 - lazy, as the parser is

    analysis = analyse_command(command)
    argvs = [argv for part in analysis.parts if part.argv for argv in _guarded_argvs(part)]
    texts = list(dict.fromkeys(" ".join(argv) for argv in argvs))
    whole = command.strip()
    # exact/prefix/wildcard deny on any part, wherever it stands, its options spelled any way
    for denying in rules.content_rules(RuleBehavior.DENY, "Bash"):
        matched = _matching_text(denying, [whole, *texts]) or _matching_spelling(denying, argvs)
        if matched is not None:
            return rule_verdict("deny", "1d", denying, f"{matched!r}")
    where = _where_words_point(analysis, place)
    if isinstance(where, str):
        guarding = _file_rules(rules, FILE_TOOLS)
        if guarding:
            return rule_verdict("ask", "1f", guarding[0], f"{where}, so a word may name any path;")
        where = _Where(bases=[place.cwd], matching=_matching(place))  # safety check asks
        shell_dirs = None
    else:
        shell_dirs = where.bases
    named = _path_rule(analysis, rules, RuleBehavior.DENY, where)
    if named is not None:
        return rule_verdict("deny", "1d", named[0], f"{named[1]!r}")
    own = tool_verdict(check, requires_interaction=False)
    if own.behavior == "deny":
        return own
    for asking in rules.content_rules(RuleBehavior.ASK, "Bash"):
        matched = _matching_text(asking, [whole, *texts]) or _matching_spelling(asking, argvs)
        if matched is not None:
            return rule_verdict("ask", "1f", asking, f"{matched!r}")
    named = _path_rule(analysis, rules, RuleBehavior.ASK, where)
    if named is not None:
        return rule_verdict("ask", "1f", named[0], f"{named[1]!r}")
    computed = _computed_rule(analysis, rules)
    if computed is not None:
        return rule_verdict("ask", "1f", computed[0], f"{computed[1]!r} computes words;")
    viewed = _process_view_rule(analysis, rules, where)
    if viewed is not None:
        return rule_verdict(
            "ask", "1f", viewed[0], f"{viewed[1]!r} leads through a process's folder under /proc;"
        )
    unread = _unread_code_rule(analysis, rules)
    if unread is not None:
        rule, shown, why = unread
        return rule_verdict("ask", "1f", rule, f"{shown!r} runs code no rule reads ({why}), so the")
    searched = _unnamed_read_rule(analysis, rules, where)
    if searched is not None:
        return rule_verdict(
            "ask", "1f", searched[0], f"{searched[1]!r} reads files no word of it names;"
        )
    written = _unnamed_write_rule(analysis, rules, place, where)
    if written is not None:
        return rule_verdict(
            "ask", "1f", written[0], f"{written[1]!r} writes files no word of it names;"
        )
    if own.immune:  # SPEC §9.3 step 1g: a write to a protected path asks, bypass or not
        return own
    if analysis.problem is not None:
        # A command we cannot read may hide a part a deny or ask rule names, or a read of a
        # path one covers: then neither a whole-tool allow nor bypass may skip the question
        # (SPEC §9.3 step 1f).
        guarded = any(
            rule.behavior in (RuleBehavior.DENY, RuleBehavior.ASK)
            and rule.content is not None
            and (rule.tool == "Bash" or rule.tool in FILE_TOOLS)
            for rule in rules.rules
        )
        return Verdict(
            behavior="ask",
            step="1f" if guarded else "3",
            reason=f"the command cannot be fully analysed: {analysis.problem}",
            immune=guarded,
            suggested_rules=(_exact_rule(whole),),
        )
    if own.behavior == "allow":
        return own
    used: Rule | None = None
    by_mode = False
    refused: list[CommandPart] = []
    git_refused = _git_refusal(analysis, place)
    # acceptEdits judges a glob by what it matches (`sed -i s/a/b/ src/*.py`); a rule, as written.
    known = None
    if place.accept_edits and shell_dirs:
        from fsm_agent.toolbox.known_words import KnownWords  # noqa: PLC0415 - the parser's

        known = KnownWords.of(analysis, list(shell_dirs))
    for part in analysis.parts:
        if part.argv and part.argv[0] in TRANSPARENT_WRAPPERS and _plain(part):
            continue
        if part.continued:
            # A program a build variable names (`make CC=clang`), run with words from a
            # file: deny and ask rules saw it above; the part that runs it is allowed or not.
            continue
        allowing = _allowing_rule(part, rules)
        if allowing is not None:
            used = used or allowing
        elif known is not None and (
            known.sets_only_told(part)
            or _accept_edits_allows(known.put_in(part), place, shell_dirs)
        ):
            by_mode = True
        elif not _read_only(part, place, shell_dirs) or (git_refused and runs_git(part)):
            refused.append(part)
    if refused:
        # A part with no program (`X=1`, `> f`) has no text a rule could name: "Bash()" would
        # be the whole tool. No rule allows such a part; the whole command is offered instead.
        offered = tuple(dict.fromkeys(_exact_rule(p.text) for p in refused if p.argv))
        here = f" here ({git_refused})" if git_refused and runs_git(refused[0]) else ""
        return Verdict(
            behavior="passthrough",
            reason=f"`{_shown(refused[0])}` is neither allowed by a rule nor read-only{here}",
            message=own.message,
            suggested_rules=offered or (_exact_rule(whole),),
        )
    if used is not None:
        return rule_verdict("allow", "3", used, "every part is allowed or read-only;")
    if by_mode:
        return Verdict(
            behavior="allow",
            source=DecisionSource.MODE,
            reason="acceptEdits mode: file operations inside the working folder",
        )
    return Verdict(behavior="allow", reason="every part of the command is read-only")


def _path_rule(
    analysis: CommandAnalysis, rules: RuleSet, behavior: RuleBehavior, where: _Where
) -> tuple[Rule, str] | None:
    """The first file-tool rule (``Read(./.env)``, ``Edit(/src/**)``) naming a path that a word
    of the command may name, and that word.

    A deny rule on reading ``.env`` is meant for ``cat .env`` as much as for the Read tool.
    Without knowing each program, every word counts as a path, from the working folder and from
    each folder the command enters with ``cd``; the path as written and as resolved both count.
    So does each string in the code a command gives an interpreter (``python3 -c
    "open('.env')"``: ``toolbox.code_names.code_literals``); a name the code builds is not
    found.
    """
    family = _file_rules(rules, FILE_TOOLS, behavior)
    if not family:
        return None
    from fsm_agent.toolbox.code_names import code_literals  # noqa: PLC0415 - lazy, see above

    resolved = _Resolved(where.bases)
    for part in analysis.parts:
        words = (
            *part.argv[1:],
            *(redirect.target for redirect in part.redirects),
            *code_literals(part, analysis),
        )
        for word in words:
            for candidate in path_candidates(word):
                rule = _covering(family, resolved.named(candidate), where.matching, under=False)
                if rule is not None:
                    return rule, word
    return None


def _file_rules(rules: RuleSet, tools: frozenset[str], *behaviors: RuleBehavior) -> list[Rule]:
    """The rules on paths (``Read(./.env)``) of the file ``tools`` with one of ``behaviors``
    (deny and ask when none is given)."""
    wanted = behaviors or (RuleBehavior.DENY, RuleBehavior.ASK)
    return [
        rule
        for rule in rules.rules
        if rule.behavior in wanted and rule.content is not None and rule.tool in tools
    ]


def _covering(
    family: list[Rule], paths: Iterable[str], matching: dict[str, Any], *, under: bool
) -> Rule | None:
    """The first rule of ``family`` that covers one of ``paths`` (absolute), or with
    ``under`` may cover a path under one of them (a folder a command reads or writes whole)."""
    matches = path_rule_may_match_under if under else path_rule_matches
    for path in paths:
        for rule in family:
            assert rule.content is not None
            if matches(rule.content, path, **matching):
                return rule
    return None


class _Where(NamedTuple):
    """The folders a command's relative words start from (the working folder, and each folder
    the command enters with ``cd``), and how a path rule is matched there (the path
    matchers' ``cwd``, ``home`` and ``case_sensitive``)."""

    bases: list[Path]
    matching: dict[str, Any]


def _where_words_point(analysis: CommandAnalysis, place: CallPlace) -> _Where | str:
    """Where a command's relative words start from, or why that cannot be known
    (``paths.word_bases``)."""
    bases = word_bases(analysis, place.cwd)
    return bases if isinstance(bases, str) else _Where(bases=bases, matching=_matching(place))


def _matching(place: CallPlace) -> dict[str, Any]:
    return {
        "cwd": place.cwd.as_posix(),
        "home": place.home.as_posix(),
        "case_sensitive": not _ignores_case(place.cwd),
    }


def _computed_rule(analysis: CommandAnalysis, rules: RuleSet) -> tuple[Rule, str] | None:
    """The first Bash deny or ask rule naming the program of a part whose words the shell
    computes (``rm $opts src`` under ``Bash(rm -rf:*)``): the words may become what the rule
    names, so the command asks (SPEC §9.3 step 1f), and the part."""
    from fsm_agent.core.option_spellings import may_match_computed  # noqa: PLC0415 - lazy

    guarded = [(part, _guarded_argvs(part)) for part in analysis.parts if part.argv]
    for behavior in (RuleBehavior.DENY, RuleBehavior.ASK):
        for rule in rules.content_rules(behavior, "Bash"):
            assert rule.content is not None
            for part, argvs in guarded:
                for argv in argvs:
                    shift = len(argv) - len(part.argv)  # git without its own options
                    computed = [i + shift for i in part.expanded]
                    if may_match_computed(rule.content, argv, computed):
                        return rule, _shown(part)
    return None


def _process_view_rule(
    analysis: CommandAnalysis, rules: RuleSet, where: _Where
) -> tuple[Rule, str] | None:
    """The first file-tool deny or ask rule, when a word of the command leads through a
    process's own folder under ``/proc`` (``rm -rf /proc/self/cwd/src``, or a link made to one
    earlier): the command reads it as its own folder, this check would read it as this
    process's, so the word may name any path a rule covers (SPEC §9.3 step 1f); and the word."""
    family = _file_rules(rules, FILE_TOOLS)
    if not family:
        return None
    from fsm_agent.toolbox.process_views import (  # noqa: PLC0415 - lazy, see above
        ProcessViews,
        makes_links,
    )

    views = ProcessViews()
    for part in analysis.parts:
        linking = makes_links(part.argv)
        for word in (*part.argv[1:], *(redirect.target for redirect in part.redirects)):
            for candidate in path_candidates(word):
                if "\0" in candidate:
                    continue
                path = expand_home(candidate)
                if any(views.through(base, path, entered=linking) for base in where.bases):
                    return family[0], word
    return None


def _unread_code_rule(analysis: CommandAnalysis, rules: RuleSet) -> tuple[Rule, str, str] | None:
    """The first Bash deny or ask rule, when a part runs code given in the command that no
    rule can read (``python3 -c``, ``awk 'BEGIN{system(...)}'``, ``sed 'e ...'``: see
    ``core/inline_code``), or is given words by ``xargs`` or ``find -exec`` that may make it run
    a command (``core/fed_words``), with the part and why: the command asks (SPEC §9.3 step 1f,
    even in bypass mode), since the rule cannot tell whether that code does what it forbids.
    Without such a rule there is nothing to dodge."""
    guarding = [
        *rules.content_rules(RuleBehavior.DENY, "Bash"),
        *rules.content_rules(RuleBehavior.ASK, "Bash"),
    ]
    if not guarding:
        return None
    from fsm_agent.core.fed_words import fed_words_run  # noqa: PLC0415 - lazy, see above
    from fsm_agent.core.inline_code import unread_code  # noqa: PLC0415 - lazy, see above

    for part in analysis.parts:
        why = unread_code(part) or fed_words_run(part)
        if why is not None:
            return guarding[0], _shown(part), why
    return None


def _unnamed_read_rule(
    analysis: CommandAnalysis, rules: RuleSet, where: _Where
) -> tuple[Rule, str] | None:
    """The first Read deny or ask rule that may cover a file the command reads without a word
    naming it, and the part that reads it.

    ``grep -r KEY .``, ``rg KEY`` and ``git grep KEY`` read every file under a folder; a
    program given names by ``xargs`` or ``find -exec`` reads what its input names; a word the
    shell computes (``cat .en?``, ``cat "$f"``) may name any file; and a program that loads
    the ``.env`` files where it runs (``python3 -m dotenv list``, ``docker compose config``,
    ``bun``: ``toolbox.env_file_loaders``) reads those. Such a read asks (SPEC §9.3 step 1f,
    even in bypass mode) when a rule covering ``Read`` may match under the folder (or match
    the files): whether the file is there is not known before the command runs.
    """
    from fsm_agent.core.read_only_commands import REPOSITORY  # noqa: PLC0415 - lazy

    family = _file_rules(rules, READ_FILE_TOOLS)
    if not family:
        return None
    from fsm_agent.toolbox.env_file_loaders import env_files, loads_env_files  # noqa: PLC0415 - lazy

    resolved = _Resolved(where.bases)
    for part in analysis.parts:
        if part.argv and loads_env_files(part.argv):
            loaded = {str(path) for base in where.bases for path in env_files(base)}
            rule = _covering(family, loaded, where.matching, under=False)
            if rule is not None:
                return rule, _shown(part)
        for word in _unnamed_reads(part):
            if word == REPOSITORY:
                folders = {(repository_top(base) or base).as_posix() for base in where.bases}
            else:
                folders = resolved.named(word)
            rule = _covering(family, folders, where.matching, under=True)
            if rule is not None:
                return rule, _shown(part)
    return None


def _unnamed_write_rule(
    analysis: CommandAnalysis, rules: RuleSet, place: CallPlace, where: _Where
) -> tuple[Rule, str] | None:
    """The first Edit deny or ask rule that may cover a file the command writes without a
    word naming it (``cp x src/``, ``tar -xf a.tar``, ``rm -rf src``, ``git reset --hard``:
    ``toolbox.unnamed_writes``), and the part that writes it: it asks (SPEC §9.3 step 1f,
    even in bypass mode), as an unnamed read does under a Read rule."""
    family = _file_rules(rules, EDIT_FILE_TOOLS)
    if not family:
        return None
    from fsm_agent.toolbox.unnamed_writes import unnamed_writes  # noqa: PLC0415 - lazy

    for part in analysis.parts:
        if not part.argv or _read_only(part, place, where.bases):
            continue
        for base in where.bases:
            resolved = _Resolved([base])
            writes = unnamed_writes(part, base)
            files = [path for word in writes.files for path in resolved.named(word)]
            folders = [path for word in writes.folders for path in resolved.named(word)]
            rule = _covering(family, files, where.matching, under=False) or _covering(
                family, folders, where.matching, under=True
            )
            if rule is not None:
                return rule, _shown(part)
    return None


def _unnamed_reads(part: CommandPart) -> list[str]:
    """The folders (as written) under which ``part`` may read files no word of it names."""
    from fsm_agent.core.read_only_commands import OUTPUT_ONLY, trees_read  # noqa: PLC0415 - lazy
    from fsm_agent.toolbox.unnamed_writes import computed_folder  # noqa: PLC0415 - lazy

    folders = list(trees_read(part.argv))
    if part.argv and part.argv[0] in OUTPUT_ONLY:
        return folders
    if part.fed and part.argv:
        folders.append("/")  # names xargs reads or find finds: anything
    computed = [part.argv[i] for i in part.expanded if i > 0]
    computed += [r.target for r in part.redirects if r.expanded and r.operator.endswith("<")]
    folders += [computed_folder(word) for word in computed]
    return folders


class _Resolved:
    """The absolute paths words may name from some base folders, as written and resolved:
    each base resolved once, each word once (a long command names the same word often)."""

    def __init__(self, bases: list[Path]) -> None:
        self._bases = bases
        self._resolved_bases: list[str] | None = None
        self._named: dict[str, set[str]] = {}

    def named(self, word: str) -> set[str]:
        """The paths ``word`` may name, from each base folder."""
        if not word or word == "-" or "\0" in word:
            return set()
        found = self._named.get(word)
        if found is None:
            found = self._named[word] = self._paths(expand_home(word))
        return found

    def _paths(self, path: Path) -> set[str]:
        if path.is_absolute():
            return {os.path.normpath(path), os.path.realpath(path)}
        if self._resolved_bases is None:
            self._resolved_bases = [os.path.realpath(base) for base in self._bases]
        found: set[str] = set()
        for base, resolved in zip(self._bases, self._resolved_bases, strict=True):
            found.add(os.path.normpath(base / path))
            found.add(resolved_under(resolved, path.as_posix()))
        return found


def _shown(part: CommandPart) -> str:
    """A part as the user would recognise it, a part with no program included."""
    redirects = (f"{r.operator} {r.target}" for r in part.redirects)
    return part.text or " ".join((*part.assignments, *redirects))


def _guarded_argvs(part: CommandPart) -> tuple[tuple[str, ...], ...]:
    """What deny and ask rules are matched against for one part: its words; for a program
    named by its path (``/bin/rm x``), the same command by the program's name (``rm x``); for
    git, the command without git's own options (``git -C . push`` is ``git push``), for
    git's dashed form the command as git spells it (``git-push`` is ``git push``), and for
    ``git send-pack`` and ``git http-push`` the same words after ``git push``."""
    from fsm_agent.core import git_commands  # noqa: PLC0415 - lazy

    program = part.argv[0]
    name = program.rsplit("/", 1)[-1] if "/" in program.rstrip("/") else program
    argvs = [part.argv, (name, *part.argv[1:])]
    if name.startswith("git-") and len(name) > 4:  # git's own dashed form: git-push is git push
        argvs.append(("git", name[4:], *part.argv[1:]))
    if name == "git":
        words = part.argv[1:]
        rest = git_commands.without_git_globals(words)
        if rest is not None:
            argvs.append(("git", *rest))
        else:  # an option we do not know: each word that may be the command, as the command
            argvs += [("git", *words[i:]) for i in git_commands.command_starts(words) or ()]
    # git's plumbing that pushes: a rule on `git push` names what it does too
    argvs += [("git", "push", *argv[2:]) for argv in argvs if argv[:2] in _PUSHING]
    return tuple(dict.fromkeys(argvs))


_PUSHING = frozenset({("git", "send-pack"), ("git", "http-push")})
"""git commands that send commits to another repository as ``git push`` does."""


def _git_refusal(analysis: CommandAnalysis, place: CallPlace) -> str | None:
    """Why git commands cannot be read-only with the git installed here, in the repositories
    the command runs in (``toolbox/git_reads``), or None."""
    from fsm_agent.toolbox.bash import git_refusal  # noqa: PLC0415 - lazy, see above

    return git_refusal(analysis, place.cwd)


def _read_only(part: CommandPart, place: CallPlace, shell_dirs: Sequence[Path] | None) -> bool:
    """One part judged by the read-only allowlist, reading only where no question is needed
    from each folder the shell may be in when it runs (``shell_dirs``, the command's
    ``paths.entered_folders``; None when there are more than are followed): ``cd src && cat
    l/x`` reads outside when ``src/l`` is a link leading out, though ``l/x`` is inside."""
    from fsm_agent.core.read_only_commands import judge_read_only  # noqa: PLC0415 - lazy
    from fsm_agent.core.shell_commands import CommandAnalysis  # noqa: PLC0415 - lazy

    if shell_dirs is None:
        return False
    verdict = judge_read_only(
        CommandAnalysis(command=part.text, parts=(part,)),
        cwd=place.cwd.as_posix(),
        readable_roots=[root.as_posix() for root in place.additional_directories],
        home=place.home.as_posix(),
        resolve=os.path.realpath,
        resolve_under=resolved_under,
        shell_dirs=[folder.as_posix() for folder in shell_dirs],
    )
    return verdict.read_only


def _matching_text(rule: Rule, texts: Iterable[str]) -> str | None:
    assert rule.content is not None
    for text in texts:
        if shell_rule_matches(rule.content, text):
            return text
    return None


def _matching_spelling(rule: Rule, argvs: Iterable[tuple[str, ...]]) -> str | None:
    """The first command a deny or ask rule matches once options are spelled alike
    (``Bash(rm -rf:*)`` and ``rm -r -f x``); never used for allow rules."""
    from fsm_agent.core.option_spellings import matches_spelled_otherwise  # noqa: PLC0415 - lazy

    assert rule.content is not None
    for argv in argvs:
        if matches_spelled_otherwise(rule.content, argv):
            return " ".join(argv)
    return None


def _plain(part: CommandPart) -> bool:
    """No ``VAR=`` prefix and no redirection that could write somewhere."""
    return not part.assignments and all(_quiet(r.operator, r.target) for r in part.redirects)


def _quiet(operator: str, target: str) -> bool:
    if operator.startswith("<<"):
        return True  # a heredoc or here-string is data
    if operator.endswith("&") and target.isdigit():
        return True  # 2>&1
    return ">" in operator and target in _QUIET_REDIRECTS


_USER_CHANGING = frozenset(
    {"sudo", "doas", "pkexec", "su", "runuser", "runuser -u", "sg", "chroot", "setpriv",
     "unshare", "nsenter", "runcon", "systemd-run"}
)  # fmt: skip
"""Wrappers that run a command as another user, in another root or namespace: an allow rule
for the command is not an allow rule for running it so."""


def _allowing_rule(part: CommandPart, rules: RuleSet) -> Rule | None:
    if not part.argv or not _plain(part) or _USER_CHANGING.intersection(part.wrappers):
        return None
    for rule in rules.content_rules(RuleBehavior.ALLOW, "Bash"):
        assert rule.content is not None
        if shell_rule_matches(rule.content, part.text):
            return rule
    return None


def _accept_edits_allows(
    part: CommandPart, place: CallPlace, shell_dirs: Sequence[Path] | None
) -> bool:
    """SPEC §9.3: acceptEdits runs simple file operations whose paths are all inside, from
    each folder the shell may be in (``shell_dirs``; None when there are more than are
    followed): after ``cd .venv/bin``, ``cp f python`` writes where the link ``python``
    leads, out of the working folder, though ``python`` alone names a path inside."""
    if not part.argv or part.assignments or part.wrappers or part.expanded or not shell_dirs:
        return False
    program, *args = part.argv
    accepted = ACCEPT_EDITS_COMMANDS.get(program)
    if accepted is None:
        return False
    for redirect in part.redirects:
        if not (
            _quiet(redirect.operator, redirect.target)
            or _inside_from_each(redirect.target, place, shell_dirs)
        ):
            return False
    operands: list[str] = []
    options: set[str] = set()
    options_done = False
    for arg in args:
        if options_done or not arg.startswith("-") or arg == "-":
            operands.append(arg)
        elif arg == "--":
            options_done = True
        elif arg.startswith("--"):
            if arg not in accepted:
                return False
            options.add(arg)
        elif not set(arg[1:]) <= accepted:
            return False
        else:
            options.update(f"-{letter}" for letter in arg[1:])
    if program in ("mkdir", "rmdir") and options & {"-p", "--parents"}:
        # Each folder on the way is made or removed, as written: `mkdir -p ../x/../w/d` makes
        # `../x`, and `rmdir -p` goes on removing up an absolute path, past the working folder.
        up = any(".." in Path(operand).parts for operand in operands)
        if up or (program == "rmdir" and any(o.startswith(("/", "~")) for o in operands)):
            return False
    if program == "sed":
        if not operands or _SED_SUBSTITUTION.fullmatch(operands[0]) is None:
            return False
        operands = operands[1:]
    # What rm removes and what cp and mv carry along: a folder holding `.git` or a `.bashrc`
    # (`rm -rf .`, `cp -r template/. sub`) changes protected paths without naming one.
    carried = operands[:-1] if program in ("cp", "mv") else operands
    if program in _TREE_COMMANDS and any(
        _holds_protected(raw, folder) for raw in carried for folder in shell_dirs
    ):
        return False
    if program == "cp" and any(_copies_through_a_link(part, place, f) for f in shell_dirs):
        return False
    return bool(operands) and all(
        _inside_from_each(operand, place, shell_dirs) for operand in operands
    )


_TREE_COMMANDS = frozenset({"rm", "rmdir", "cp", "mv"})


def _copies_through_a_link(part: CommandPart, place: CallPlace, folder: Path) -> bool:
    """Whether ``cp`` may write through a link out of the working folder: it opens a file
    already in the destination folder under a source's name and writes where that leads
    (``cp src/python .venv/bin/`` overwrites the Python the environment's ``bin/python``
    links to), and copies a folder into one already there, whose links it follows too."""
    from fsm_agent.toolbox.placed_files import placed_sources  # noqa: PLC0415 - lazy

    placed = placed_sources(part.argv, folder)
    if placed is None:
        return False  # the destination is the file itself, judged as its word
    target, names = placed
    if names is None:
        return True  # names that cannot be known
    destination = word_path(target, folder)
    for name, may_be_folder in names:
        landing = destination / name
        if not _inside(landing.as_posix(), place, folder):
            return True
        if may_be_folder and holds_protected(landing, through_links=True):
            return True  # a link in it leads out (or a protected name, which asks anyway)
    return False


def _holds_protected(raw: str, folder: Path) -> bool:
    """Whether the folder ``raw`` names from ``folder`` (not through a link) holds a protected
    path."""
    path = expand_home(raw)
    return holds_protected(path if path.is_absolute() else folder / path)


def _inside_from_each(raw: str, place: CallPlace, shell_dirs: Sequence[Path]) -> bool:
    return all(_inside(raw, place, folder) for folder in shell_dirs)


def _inside(raw: str, place: CallPlace, folder: Path) -> bool:
    """Whether ``raw``, relative to ``folder``, is a path inside the working folder that is not
    protected."""
    if not raw or (raw.startswith("~") and not raw.startswith("~/")):
        return False  # ~user paths, and the home folder itself, are not inside
    path = expand_home(raw)
    literal = path if path.is_absolute() else folder / path
    # is_protected looks at the path as written and as resolved (a link named .git counts)
    return literal.resolve().is_relative_to(place.cwd) and not is_protected(literal)


def _exact_rule(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    return f"Bash({escaped.replace('*', chr(92) + '*')})"
