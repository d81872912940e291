"""Permission rules: their grammar, their sources and how they match (SPEC §9.2). Pure, no I/O.

A rule is ``Tool`` (the whole tool) or ``Tool(content)``. ``Tool()`` and ``Tool(*)`` also mean
the whole tool; ``\\(`` and ``\\)`` escape parentheses inside the content; legacy tool names are
mapped to today's. ``mcp__server`` and ``mcp__server__*`` cover every tool of an MCP server.

What content means depends on the tool:

* **Bash**: ``prefix:*`` matches the command ``prefix`` and every command that starts with
  ``prefix`` followed by a space; an unescaped ``*`` anywhere is a wildcard over the whole
  command (and a single trailing `` *`` also matches the bare command); anything else must
  equal the command exactly. The permission chain matches each part of a compound command.
* **File tools** (Read, Edit, Write, Glob, Grep): a gitignore-style path pattern matched on
  the resolved path. ``//x`` is the absolute path ``/x``, ``~/x`` is under the home folder,
  ``/x`` and ``./x`` (or any pattern holding a ``/``) are under the working folder, and a
  pattern without a ``/`` matches a name at any depth. ``*`` stays within one path segment,
  ``**`` spans segments, and a pattern naming a folder also covers everything inside it.
  ``Read(...)`` rules apply to every tool that reads files (Read, Glob, Grep) and
  ``Edit(...)`` rules to every tool that writes them (Edit, Write), as in Claude Code.

A rule that does not parse is a ``ConfigError`` naming the rule, where it came from and why;
:func:`check_rule_tools` refuses rules that name a tool the agent does not have.
"""

from __future__ import annotations

import enum
import functools
import re
import warnings
from collections.abc import Collection, Iterable, Iterator, Sequence

import attrs

from fsm_agent.errors import ConfigError, SettingsWarning


class RuleSource(enum.Enum):
    """Where a rule came from; members are listed in the order SPEC §9.2 searches them."""

    USER = "userSettings"
    PROJECT = "projectSettings"
    LOCAL = "localSettings"
    FLAG = "flagSettings"
    POLICY = "policySettings"
    CLI = "cliArg"
    COMMAND = "command"
    SESSION = "session"


_SOURCE_ORDER = {source: index for index, source in enumerate(RuleSource)}


class RuleBehavior(enum.Enum):
    """What a matching rule says (SPEC §9.2: deny beats ask beats allow, across sources)."""

    ALLOW = "allow"
    DENY = "deny"
    ASK = "ask"


LEGACY_TOOL_NAMES = {
    "Task": "Agent",
    "KillShell": "TaskStop",
    "BashOutput": "TaskOutput",
    "AgentOutputTool": "TaskOutput",
    "BashOutputTool": "TaskOutput",
}
"""Old tool names rules may still use, and the names they mean today (SPEC §9.2)."""

SHELL_TOOL = "Bash"
READ_FILE_TOOLS = frozenset({"Read", "Glob", "Grep"})
EDIT_FILE_TOOLS = frozenset({"Edit", "Write"})
FILE_TOOLS = READ_FILE_TOOLS | EDIT_FILE_TOOLS
MCP_PREFIX = "mcp__"

_TOOL_NAME = re.compile(r"[A-Za-z0-9_\-]+(\*)?")


@attrs.frozen(kw_only=True)
class Rule:
    """One parsed permission rule.

    Attributes:
        tool: the tool it names (legacy names already mapped), or ``mcp__server`` for a rule
            covering a whole MCP server.
        content: the text between the parentheses, unescaped; None for a whole-tool rule.
        behavior: allow, deny or ask.
        source: where the rule came from.
        text: the rule as written.
        origin: the file it was read from, when there was one.
    """

    tool: str
    content: str | None
    behavior: RuleBehavior
    source: RuleSource
    text: str
    origin: str = ""

    @property
    def server_wide(self) -> bool:
        """Whether this rule covers every tool of an MCP server."""
        return self.content is None and _mcp_server_rule(self.tool)

    def names_tool(self, tool_name: str) -> bool:
        """Whether the rule is about ``tool_name`` (its content aside)."""
        if self.server_wide:
            return tool_name.startswith(self.tool + "__")
        if self.content is not None and self.tool in FILE_TOOLS:
            # Read(...) covers every reading tool, Edit(...) every writing one (Claude Code).
            if self.tool == "Read":
                return tool_name in READ_FILE_TOOLS
            if self.tool == "Edit":
                return tool_name in EDIT_FILE_TOOLS
        return self.tool == tool_name

    def where(self) -> str:
        """Where the rule came from, for messages: the source and the file, if any."""
        return f"{self.source.value} ({self.origin})" if self.origin else self.source.value


def _mcp_server_rule(tool: str) -> bool:
    """``mcp__server`` (after a trailing ``__*`` was dropped) names a whole server."""
    return tool.startswith(MCP_PREFIX) and "__" not in tool[len(MCP_PREFIX) :]


def _refuse(text: str, source: RuleSource, origin: str, why: str) -> ConfigError:
    where = f"{source.value} ({origin})" if origin else source.value
    return ConfigError(f"permission rule {text!r} from {where}: {why}")


def parse_rule(text: str, behavior: RuleBehavior, source: RuleSource, *, origin: str = "") -> Rule:
    """Parse one rule (SPEC §9.2 syntax).

    Raises:
        ConfigError: the rule does not parse; the message names the rule, its source and why.
    """
    if not isinstance(text, str):
        raise _refuse(repr(text), source, origin, "a rule must be a string")
    stripped = text.strip()
    if not stripped:
        raise _refuse(text, source, origin, "the rule is empty")
    opening = _first_unescaped(stripped, "(")
    if opening is None:
        if _last_unescaped(stripped, ")") is not None:
            raise _refuse(text, source, origin, "')' without '('")
        name, content = stripped, None
    else:
        if not stripped.endswith(")") or _is_escaped(stripped, len(stripped) - 1):
            raise _refuse(
                text, source, origin, "the content must end with ')' as the rule's last character"
            )
        name = stripped[:opening].strip()
        content = _unescape(stripped[opening + 1 : -1])
        if content in {"", "*"}:
            content = None  # SPEC §9.2: Tool() and Tool(*) mean the whole tool
    match = _TOOL_NAME.fullmatch(name)
    if match is None:
        raise _refuse(
            text,
            source,
            origin,
            "a tool name is letters, digits, '_' and '-' (e.g. Bash, Read, mcp__server)",
        )
    if match.group(1) is not None:
        if not (name.startswith(MCP_PREFIX) and name.endswith("__*")):
            raise _refuse(
                text, source, origin, "'*' in a tool name is only allowed as mcp__server__*"
            )
        if content is not None:
            raise _refuse(text, source, origin, "mcp__server__* takes no content")
        name = name[: -len("__*")]
        if not _mcp_server_rule(name):
            raise _refuse(text, source, origin, "mcp__server__* needs a plain server name")
    name = LEGACY_TOOL_NAMES.get(name, name)
    if content is not None:
        problem = _content_problem(name, content)
        if problem is not None:
            raise _refuse(text, source, origin, problem)
    return Rule(
        tool=name, content=content, behavior=behavior, source=source, text=text, origin=origin
    )


def _content_problem(tool: str, content: str) -> str | None:
    if tool.startswith(MCP_PREFIX):
        return "MCP tool rules take no content"
    if tool in FILE_TOOLS:
        return _path_pattern_problem(content)
    if tool == SHELL_TOOL:
        return None
    file_tools = ", ".join(sorted(FILE_TOOLS))
    return (
        f"content rules are understood for Bash and the file tools ({file_tools}); "
        f"{tool}(...) would never match, write {tool} for the whole tool"
    )


def _is_escaped(text: str, index: int) -> bool:
    backslashes = 0
    while index - backslashes - 1 >= 0 and text[index - backslashes - 1] == "\\":
        backslashes += 1
    return backslashes % 2 == 1


def _first_unescaped(text: str, char: str) -> int | None:
    for index, found in enumerate(text):
        if found == char and not _is_escaped(text, index):
            return index
    return None


def _last_unescaped(text: str, char: str) -> int | None:
    for index in range(len(text) - 1, -1, -1):
        if text[index] == char and not _is_escaped(text, index):
            return index
    return None


def _unescape(content: str) -> str:
    """``\\(`` → ``(``, ``\\)`` → ``)``, ``\\\\`` → ``\\``; other backslashes stay (``\\*``)."""
    return re.sub(r"\\([()\\])", r"\1", content)


CLAUDE_CODE_TOOLS = frozenset(
    {
        "Agent", "AskUserQuestion", "BashOutput", "EnterPlanMode", "ExitPlanMode", "LS", "LSP",
        "ListMcpResourcesTool", "MultiEdit", "NotebookEdit", "NotebookRead", "PowerShell",
        "ReadMcpResourceTool", "Skill", "SlashCommand", "TaskOutput", "TaskStop", "TodoWrite",
        "ToolSearch", "WebFetch", "WebSearch",
    }
)  # fmt: skip
"""Tools of Claude Code that an fsm_agent agent may lack. A rule naming one (common in a
user's existing settings files) can neither protect nor expose anything here, so it is kept
with a ``SettingsWarning`` instead of refused; any other unknown name is a typo to report."""


def check_rule_tools(
    rules: Iterable[Rule], tool_names: Collection[str], mcp_servers: Collection[str] = ()
) -> None:
    """Refuse rules that name a tool the agent does not have.

    MCP tools may be unknown when the agent is built, so ``mcp__server...`` rules are accepted
    for the servers listed in ``mcp_servers`` as well as for servers some tool belongs to.

    Raises:
        ConfigError: naming the rule, its source and the tools the agent has.
    """
    known = set(tool_names)
    servers = set(mcp_servers) | {
        name[len(MCP_PREFIX) :].split("__", 1)[0] for name in known if name.startswith(MCP_PREFIX)
    }
    for rule in rules:
        if rule.tool.startswith(MCP_PREFIX):
            server = rule.tool[len(MCP_PREFIX) :].split("__", 1)[0]
            if rule.tool in known or server in servers:
                continue
            why = f"the agent declares no MCP server {server!r}"
        elif rule.tool in known:
            continue
        elif rule.tool in CLAUDE_CODE_TOOLS:
            warnings.warn(
                f"permission rule {rule.text!r} ({rule.source.value}): this agent has no "
                f"{rule.tool} tool, so the rule never applies",
                SettingsWarning,
                stacklevel=2,
            )
            continue
        else:
            why = f"the agent has no tool {rule.tool!r} (it has: {', '.join(sorted(known))})"
        raise _refuse(rule.text, rule.source, rule.origin, why)


# --- Bash content (SPEC §9.2, shellRuleMatching) ------------------------------------------------


def shell_rule_matches(content: str, command: str) -> bool:
    """Whether a Bash rule's content matches one command (a part of a compound command).

    Blanks around the content do not count: ``Bash( rm:* )`` is the prefix rule ``rm:*``.
    """
    command = command.strip()
    content = content.strip()
    if content.endswith(":*") and not _is_escaped(content, len(content) - 1):
        prefix = content[:-2].strip()
        return command == prefix or command.startswith(prefix + " ")
    if _has_wildcard(content):
        return _shell_wildcard(content).fullmatch(command) is not None
    return command == _unescape_stars(content).strip()


def _has_wildcard(content: str) -> bool:
    return any(char == "*" and not _is_escaped(content, i) for i, char in enumerate(content))


def _unescape_stars(content: str) -> str:
    return content.replace("\\*", "*")


def _shell_wildcard(content: str) -> re.Pattern[str]:
    pieces: list[str] = []
    index = 0
    body = content.strip()
    trailing = body.endswith(" *") and not _is_escaped(body, len(body) - 1)
    if trailing:
        body = body[:-2]
    while index < len(body):
        char = body[index]
        if char == "\\" and index + 1 < len(body) and body[index + 1] == "*":
            pieces.append(re.escape("*"))
            index += 2
            continue
        pieces.append(".*" if char == "*" else re.escape(char))
        index += 1
    pattern = "".join(pieces)
    if trailing:
        # SPEC §9.2: a single trailing " *" also matches the bare command.
        pattern += "(?: .*)?"
    return re.compile(pattern, re.DOTALL)


# --- path content (gitignore-style) -------------------------------------------------------------


def _path_pattern_problem(content: str) -> str | None:
    if "\x00" in content:
        return "a path pattern cannot hold a NUL character"
    depth = 0
    for index, char in enumerate(content):
        if char == "[" and not _is_escaped(content, index):
            depth += 1
        elif char == "]" and depth:
            depth -= 1
    if depth:
        return "'[' without a closing ']' in the path pattern"
    return None


def path_rule_matches(
    content: str, path: str, *, cwd: str, home: str, case_sensitive: bool = True
) -> bool:
    """Whether a file-tool rule's path pattern matches the resolved absolute ``path``.

    Args:
        content: the rule's pattern (see the module docstring for anchors).
        path: the resolved, absolute POSIX path the tool will touch.
        cwd: the resolved working folder (anchor of ``/x``, ``./x`` and ``x/y``).
        home: the home folder (anchor of ``~/x``).
        case_sensitive: False on case-insensitive file systems.
    """
    return _path_pattern(content, cwd, home, case_sensitive).fullmatch(path) is not None


@functools.lru_cache(maxsize=256)
def _path_pattern(content: str, cwd: str, home: str, case_sensitive: bool) -> re.Pattern[str]:
    """A rule's pattern compiled (kept: a command's every word meets every path rule)."""
    flags = 0 if case_sensitive else re.IGNORECASE
    return re.compile(_path_regex(content, cwd=cwd, home=home), flags)


def path_rule_may_match_under(
    content: str, folder: str, *, cwd: str, home: str, case_sensitive: bool = True
) -> bool:
    """Whether a file-tool rule's pattern may match ``folder`` or anything inside it: whether
    a program reading every file under ``folder`` (``grep -r``) may read a file the rule covers.

    Decided by the pattern's literal folder (its anchor and the segments before the first
    wildcard): the rule may match under ``folder`` when that folder and ``folder`` are one
    inside the other. ``.env`` (any depth under the working folder) may match under any folder
    inside the working folder, and under any folder holding it.
    """
    anchor, pattern = _anchored(content, cwd=cwd, home=home)
    literal = [anchor.rstrip("/")]
    for segment in pattern.rstrip("/").split("/"):
        if not segment or any(char in segment for char in "*?[\\"):
            break
        literal.append(segment)
    base = "/".join(literal) or "/"
    if not case_sensitive:
        base, folder = base.lower(), folder.lower()
    return _inside(base, folder) or _inside(folder, base)


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _anchored(content: str, *, cwd: str, home: str) -> tuple[str, str]:
    """The folder a path pattern is anchored at, and the pattern from there (a bare name gets
    ``**/`` in front: gitignore matches it at any depth)."""
    pattern = content
    if pattern.startswith("//"):
        anchor, pattern = "/", pattern[2:]
    elif pattern == "~" or pattern.startswith("~/"):
        anchor, pattern = home, pattern[2:]
    elif pattern.startswith("./"):
        anchor, pattern = cwd, pattern[2:]
    elif pattern.startswith("/"):
        anchor, pattern = cwd, pattern[1:]
    elif "/" in pattern.rstrip("/"):
        anchor = cwd
    else:
        anchor = cwd
        pattern = "**/" + pattern  # gitignore: a bare name matches at any depth
    return anchor, pattern


def _path_regex(content: str, *, cwd: str, home: str) -> str:
    anchor, pattern = _anchored(content, cwd=cwd, home=home)
    pattern = pattern.rstrip("/")
    prefix = re.escape(anchor.rstrip("/"))
    if not pattern:
        return prefix + "(?:/.*)?"
    return prefix + "/" + _glob_to_regex(pattern) + "(?:/.*)?"


def _glob_to_regex(pattern: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(pattern):
        if pattern.startswith("**/", index):
            out.append("(?:[^/]*/)*")
            index += 3
            continue
        if pattern.startswith("**", index):
            out.append(".*")
            index += 2
            continue
        char = pattern[index]
        if char == "\\" and index + 1 < len(pattern):
            out.append(re.escape(pattern[index + 1]))
            index += 2
            continue
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end = pattern.index("]", index + 1)
            body = pattern[index + 1 : end]
            negate = body.startswith("!")
            body = body[1:] if negate else body
            out.append("[" + ("^" if negate else "") + body.replace("\\", "\\\\") + "]")
            index = end + 1
            continue
        else:
            out.append(re.escape(char))
        index += 1
    return "".join(out)


# --- rule sets ----------------------------------------------------------------------------------


@attrs.frozen
class RuleSet:
    """Rules from every source, ordered as SPEC §9.2 searches them (first match wins)."""

    rules: tuple[Rule, ...] = ()

    @classmethod
    def of(cls, rules: Iterable[Rule]) -> RuleSet:
        """The rules, sorted by source (stable: order within a source is kept)."""
        return cls(tuple(sorted(rules, key=lambda rule: _SOURCE_ORDER[rule.source])))

    def with_rules(self, extra: Iterable[Rule]) -> RuleSet:
        """This set plus ``extra`` (for session rules added while running)."""
        return RuleSet.of((*self.rules, *extra))

    def whole_tool(self, behavior: RuleBehavior, tool_name: str) -> Rule | None:
        """The first whole-tool rule of ``behavior`` naming ``tool_name``."""
        for rule in self.rules:
            if rule.behavior is behavior and rule.content is None and rule.names_tool(tool_name):
                return rule
        return None

    def content_rules(self, behavior: RuleBehavior, tool_name: str) -> Iterator[Rule]:
        """Every content rule of ``behavior`` about ``tool_name``, in search order."""
        for rule in self.rules:
            if (
                rule.behavior is behavior
                and rule.content is not None
                and rule.names_tool(tool_name)
            ):
                yield rule

    def texts(self) -> Sequence[str]:
        """Every rule as written."""
        return [rule.text for rule in self.rules]
