"""The permission chain: may this tool call run? (SPEC §9.3, §9.5, §9.6)

Every call that passed validation and its PreToolUse hooks is put to
:meth:`PermissionPolicy.decide`, which follows SPEC §9.3 step by step and records *why* it
decided (the step, the rule and its source, the mode, the hook) in the ``PermissionDecided`` it
returns; the trace keeps it.

1a. a whole-tool deny rule → deny (a deny rule wins over everything: hooks, modes, users);
    plan mode (SPEC §9.1): anything not read-only is denied, unless the session may bypass;
1b. a whole-tool ask rule → ask;
1c. the call's content: the tool's own ``check_permissions`` and the content rules (Bash parts,
    file paths; ``runtime/permission_content.py``);
1d. content deny → deny;
1e–1g. an ask from a tool that needs a person, from a content ask rule, or from a safety check
    (protected paths) → ask, even in ``bypassPermissions`` mode;
2a. ``bypassPermissions`` → allow;
2b. a whole-tool allow rule → allow;
3.  what the content said: allow → allow; otherwise ask.

A PreToolUse hook's decision is applied as SPEC §9.5 says: *allow* skips the question but not
deny or ask rules nor safety checks (steps 1a–1g still run); *ask* asks in every mode (deny rules
still win). An ask is then answered: ``dontAsk`` turns it into a deny without prompting; with no
``ask`` callback the call is refused with the reason "no one to ask"; otherwise the callback
decides, and may allow with a changed input, allow always (a session rule, recorded in the
trace), deny with a message, or deny and end the turn.
"""

from __future__ import annotations

import enum
import inspect
from collections.abc import Awaitable, Callable, Collection, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from fsm_agent.core import texts
from fsm_agent.core.kinds import DecisionSource, PermissionBehavior
from fsm_agent.core.permission_rules import (
    Rule,
    RuleBehavior,
    RuleSet,
    RuleSource,
    check_rule_tools,
    parse_rule,
)
from fsm_agent.errors import ConfigError
from fsm_agent.runtime.permission_content import (
    CallPlace,
    Verdict,
    path_verdict,
    rule_verdict,
    shell_verdict,
    tool_verdict,
)
from fsm_agent.runtime.tool import PermissionCheck, Tool

if TYPE_CHECKING:
    from fsm_agent.core.effects import AskPermission
    from fsm_agent.core.events import PermissionDecided
    from fsm_agent.runtime.settings import Settings


class PermissionMode(enum.Enum):
    """Permission modes (SPEC §9.1, the external ones)."""

    DEFAULT = "default"
    ACCEPT_EDITS = "acceptEdits"
    PLAN = "plan"
    BYPASS = "bypassPermissions"
    DONT_ASK = "dontAsk"


@attrs.frozen(kw_only=True)
class PermissionRequest:
    """What the ``ask`` callback is shown.

    Attributes:
        tool_name: the tool.
        input: the call's input.
        message: why the question is asked, in words.
        reason: a machine-readable cause (``safety_check``, ``outside_working_folder``, …).
        suggested_rules: the allow rules an "allow always" answer adds by default.
    """

    tool_name: str
    input: dict[str, Any]
    message: str = ""
    reason: str = ""
    suggested_rules: tuple[str, ...] = ()


@attrs.frozen(kw_only=True)
class PermissionAnswer:
    """The user's answer, in the shape of claude-agent-sdk's ``can_use_tool`` result.

    Attributes:
        allow: run the call, or not.
        message: for a denial, what the model is told.
        abort_turn: for a denial, end the turn as well (SPEC §9.6).
        updated_input: for an allow, the input the tool runs with instead.
        always: for an allow, add allow rules for the rest of the session ("allow always");
            they are recorded in the trace, so replay and resume see them.
        rules: the rules "allow always" adds; empty means the request's ``suggested_rules``.
    """

    allow: bool
    message: str = ""
    abort_turn: bool = False
    updated_input: dict[str, Any] | None = None
    always: bool = False
    rules: tuple[str, ...] = ()

    @classmethod
    def allow_once(cls, updated_input: dict[str, Any] | None = None) -> PermissionAnswer:
        """Allow this call (optionally with a changed input)."""
        return cls(allow=True, updated_input=updated_input)

    @classmethod
    def allow_always(cls, rules: Sequence[str] = ()) -> PermissionAnswer:
        """Allow this call and, for the rest of the session, what ``rules`` allow."""
        return cls(allow=True, always=True, rules=tuple(rules))

    @classmethod
    def deny(cls, message: str = "", *, abort_turn: bool = False) -> PermissionAnswer:
        """Refuse the call, telling the model ``message``; ``abort_turn`` ends the turn."""
        return cls(allow=False, message=message, abort_turn=abort_turn)


AskCallback = Callable[
    [PermissionRequest], "PermissionAnswer | bool | Awaitable[PermissionAnswer | bool]"
]


@attrs.frozen(kw_only=True)
class CallFacts:
    """What the driver knows about one call beyond the effect (all optional for old callers).

    Attributes:
        tool: the tool object (for its path field, its shell flag, interaction needs).
        cwd: the working folder, resolved.
        home: the home folder (rules with ``~/``).
        target: the resolved path a file tool will touch.
        session_rules: allow rules added by "allow always" answers so far.
    """

    tool: Tool[Any] | None = None
    cwd: Path = attrs.field(factory=lambda: Path.cwd().resolve())
    home: Path = attrs.field(factory=Path.home)
    target: Path | None = None
    session_rules: tuple[str, ...] = ()


def _parse_all(texts_: Iterable[str], behavior: RuleBehavior, source: RuleSource) -> list[Rule]:
    if isinstance(texts_, str):
        texts_ = [texts_]  # a lone string is one rule, not a set of letters
    return [parse_rule(text, behavior, source) for text in sorted(texts_)]


@attrs.frozen(kw_only=True)
class PermissionPolicy:
    """Rules, mode and the ``ask`` callback.

    Attributes:
        mode: the permission mode (SPEC §9.1).
        allow: allow rules (SPEC §9.2 syntax: ``"Read"``, ``"Bash(git status)"``,
            ``"Bash(npm run:*)"``, ``"Edit(./src/**)"``); their source is ``cliArg``.
        deny: deny rules, likewise.
        ask_rules: ask rules, likewise.
        ask: the callback that answers questions; None means no one can be asked.
        rules: rules parsed elsewhere (settings files), with their own sources.
        additional_directories: folders outside the working folder that may be read.
        mcp_servers: MCP servers whose ``mcp__server...`` rules are accepted before their tools
            are known.
        bypass_available: the session started in ``bypassPermissions``; plan mode then acts as
            bypass (SPEC §9.1).

    Raises:
        ConfigError: a rule does not parse (the message names it, its source and why), or
            ``ask`` is not callable.
    """

    mode: PermissionMode = PermissionMode.DEFAULT
    allow: Collection[str] = frozenset()
    deny: Collection[str] = frozenset()
    ask_rules: Collection[str] = frozenset()
    ask: AskCallback | None = None
    rules: Sequence[Rule] = ()
    additional_directories: Sequence[Path] = ()
    mcp_servers: Collection[str] = ()
    bypass_available: bool = False
    rule_set: RuleSet = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        parsed = [
            *self.rules,
            *_parse_all(self.deny, RuleBehavior.DENY, RuleSource.CLI),
            *_parse_all(self.ask_rules, RuleBehavior.ASK, RuleSource.CLI),
            *_parse_all(self.allow, RuleBehavior.ALLOW, RuleSource.CLI),
        ]
        if self.ask is not None and not callable(self.ask):
            # ask=True reads as "ask me", but only a callable can answer.
            raise ConfigError(
                "ask must be a callable that answers a PermissionRequest (or None: no one to "
                f"ask), not {type(self.ask).__name__} {self.ask!r:.40}"
            )
        object.__setattr__(self, "rule_set", RuleSet.of(parsed))

    def with_settings(self, settings: Settings) -> PermissionPolicy:
        """This policy with the rules, extra folders and default mode of ``settings``.

        The settings' ``defaultMode`` applies when this policy's mode is ``default``; a mode
        chosen in code wins.
        """
        mode = self.mode
        if mode is PermissionMode.DEFAULT and settings.default_mode is not None:
            mode = settings.default_mode
        return attrs.evolve(
            self,
            mode=mode,
            rules=(*self.rules, *settings.rules),
            additional_directories=(
                *self.additional_directories,
                *settings.additional_directories,
            ),
        )

    def check_tools(self, tool_names: Collection[str]) -> None:
        """Refuse rules naming a tool the agent does not have (a ``ConfigError``)."""
        check_rule_tools(self.rule_set.rules, tool_names, self.mcp_servers)

    async def decide(
        self, effect: AskPermission, check: PermissionCheck, facts: CallFacts | None = None
    ) -> PermissionDecided:
        """Answer one ``AskPermission`` effect, given the tool's own opinion."""
        facts = facts if facts is not None else CallFacts()
        rules = self.rule_set.with_rules(
            parse_rule(text, RuleBehavior.ALLOW, RuleSource.SESSION) for text in facts.session_rules
        )
        chain = _Chain(self, effect, facts, rules, check)
        verdict = chain.evaluate(check)
        if verdict.behavior != "ask":
            return chain.decided(verdict)
        return await chain.answer(verdict)


class _Chain:
    """One run of the chain for one call."""

    def __init__(
        self,
        policy: PermissionPolicy,
        effect: AskPermission,
        facts: CallFacts,
        rules: RuleSet,
        check: PermissionCheck,
    ) -> None:
        self.check = check
        self.policy = policy
        self.effect = effect
        self.facts = facts
        self.rules = rules
        self.name = effect.tool_name

    # SPEC §9.3 (and §9.5 for hooks): every return names its step.
    def evaluate(self, check: PermissionCheck) -> Verdict:
        mode = self.policy.mode
        denied = self.rules.whole_tool(RuleBehavior.DENY, self.name)
        if denied is not None:  # step 1a
            message = texts.denied_by_rule(self.name)
            return attrs.evolve(rule_verdict("deny", "1a", denied), message=message)
        content = self._content(check)  # step 1c
        if content.behavior == "deny":  # step 1d (a content deny rule also beats a hook's ask)
            return attrs.evolve(content, message=content.message or texts.denied_by_rule(self.name))
        bypass = mode is PermissionMode.BYPASS or (
            mode is PermissionMode.PLAN and self.policy.bypass_available
        )
        if mode is PermissionMode.PLAN and not bypass and not self.effect.read_only:
            # SPEC §9.1: plan mode runs read-only tools only.
            return Verdict(
                behavior="deny",
                source=DecisionSource.MODE,
                step="plan",
                reason="plan mode runs read-only tools only",
                message=texts.denied_in_plan_mode(self.name),
            )
        if self.effect.hook_decision == "ask":  # SPEC §9.5: a hook's ask asks in every mode
            return Verdict(
                behavior="ask",
                source=DecisionSource.HOOK,
                step="hook",
                reason=self.effect.hook_reason or "a PreToolUse hook asked",
                immune=True,
                suggested_rules=content.suggested_rules,
            )
        asked = self.rules.whole_tool(RuleBehavior.ASK, self.name)
        if asked is not None:  # step 1b
            verdict = rule_verdict("ask", "1b", asked)
            return attrs.evolve(verdict, suggested_rules=content.suggested_rules)
        if content.behavior == "ask" and content.immune:  # steps 1e, 1f, 1g
            return content
        if self.effect.hook_decision == "allow":  # SPEC §9.5: no question, rules checked above
            return Verdict(
                behavior="allow",
                source=DecisionSource.HOOK,
                step="hook",
                reason=self.effect.hook_reason or "a PreToolUse hook allowed",
            )
        if bypass:  # step 2a
            return Verdict(
                behavior="allow",
                source=DecisionSource.MODE,
                step="2a",
                reason=f"{mode.value} mode",
            )
        allowed = self.rules.whole_tool(RuleBehavior.ALLOW, self.name)
        if allowed is not None:  # step 2b
            return rule_verdict("allow", "2b", allowed)
        if content.behavior == "allow":  # step 3
            return attrs.evolve(content, step="3")
        return attrs.evolve(content, behavior="ask", step="3")

    def _content(self, check: PermissionCheck) -> Verdict:
        tool = self.facts.tool
        interaction = tool is not None and tool.requires_user_interaction
        place = CallPlace(
            cwd=self.facts.cwd,
            home=self.facts.home,
            additional_directories=tuple(self.policy.additional_directories),
            accept_edits=self.policy.mode is PermissionMode.ACCEPT_EDITS,
        )
        command = self.effect.input.get("command")
        if tool is not None and tool.is_shell and isinstance(command, str):
            return shell_verdict(command, check, self.rules, place)
        if self.facts.target is not None:
            return path_verdict(
                self.name,
                self.facts.target,
                check,
                self.rules,
                place,
                read_only=self.effect.read_only,
                requires_interaction=interaction,
            )
        return tool_verdict(check, requires_interaction=interaction)

    def decided(
        self,
        verdict: Verdict,
        *,
        behavior: PermissionBehavior | None = None,
        updated_input: dict[str, Any] | None = None,
        abort_turn: bool = False,
        added_rules: tuple[str, ...] = (),
    ) -> PermissionDecided:
        from fsm_agent.core.events import PermissionDecided  # noqa: PLC0415 - loaded when first used

        if behavior is None:
            allow = verdict.behavior == "allow"
            behavior = PermissionBehavior.ALLOW if allow else PermissionBehavior.DENY
        rule = verdict.rule
        return PermissionDecided(
            effect_id=self.effect.effect_id,
            behavior=behavior,
            source=verdict.source,
            reason=verdict.reason,
            message=verdict.message if behavior is PermissionBehavior.DENY else "",
            updated_input=updated_input,
            abort_turn=abort_turn,
            step=verdict.step,
            rule=rule.text if rule is not None else "",
            rule_source=rule.where() if rule is not None else "",
            mode=self.policy.mode.value,
            added_rules=added_rules,
        )

    async def answer(self, question: Verdict) -> PermissionDecided:
        """Someone must be asked: the mode, the absence of a callback, or the callback decides."""
        why = question.reason
        because = f" ({why})" if why else ""
        ask = self.policy.ask
        if self.policy.mode is PermissionMode.DONT_ASK or ask is None:
            if self.policy.mode is PermissionMode.DONT_ASK:  # SPEC §9.3 post-processing
                source, step = DecisionSource.MODE, "dontAsk"
                short = "dontAsk mode: no questions are asked"
            else:
                source, step, short = DecisionSource.NO_ONE_TO_ASK, "no_one_to_ask", "no one to ask"
            return self.decided(
                attrs.evolve(
                    question,
                    source=source,
                    step=step,
                    reason=f"{short}{because}",
                    message=texts.not_granted(self.name, short),
                )
            )
        request = PermissionRequest(
            tool_name=self.name,
            input=self.effect.input,
            message=question.message or why,
            reason=self._request_reason(question),
            suggested_rules=question.suggested_rules or (self.name,),
        )
        result = ask(request)
        if inspect.isawaitable(result):
            result = await result
        if isinstance(result, bool):
            result = PermissionAnswer(allow=result)
        safety = question.source is DecisionSource.SAFETY_CHECK
        user = DecisionSource.SAFETY_CHECK if safety else DecisionSource.USER
        if not result.allow:
            return self.decided(
                attrs.evolve(
                    question,
                    source=user,
                    step="user",
                    reason=f"user denied{because}",
                    message=result.message,
                ),
                abort_turn=result.abort_turn,
            )
        added: tuple[str, ...] = ()
        if result.always:
            added = result.rules or request.suggested_rules
            for text in added:  # a malformed rule fails here, not later
                parse_rule(text, RuleBehavior.ALLOW, RuleSource.SESSION)
        return self.decided(
            attrs.evolve(question, source=user, step="user", reason=f"user allowed{because}"),
            behavior=PermissionBehavior.ALLOW,
            updated_input=result.updated_input,
            added_rules=tuple(added),
        )

    def _request_reason(self, question: Verdict) -> str:
        """The machine-readable cause shown to the callback."""
        kind: str = question.source.value
        if question.source in {DecisionSource.TOOL, DecisionSource.SAFETY_CHECK}:
            return self.check.reason or kind
        return kind
