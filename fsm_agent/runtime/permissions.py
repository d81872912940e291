"""Permission answers for tool calls, first version (SPEC §9, simplified).

Order, each step recording *why* it decided (the reason goes into the trace):

1. a deny rule on the tool name → deny (a deny always wins, even over hooks and modes);
2. a PreToolUse hook said deny → deny (the core already handled it) / ask → ask the user;
3. the tool's own ``check_permissions``: deny → deny; ask with reason ``safety_check`` → ask,
   even in ``bypassPermissions`` mode;
4. ``bypassPermissions`` mode → allow; an allow rule, a hook's allow, or a read-only call whose
   tool allows → allow; ``acceptEdits`` allows file edits inside the working directory;
5. otherwise ask: the ``ask`` callback decides; ``dontAsk`` mode, or no callback, → deny.

The full rule engine (rule sources, content patterns, the classifier) is a later piece; this
module keeps the seam: ``PermissionPolicy.decide`` gets the whole request and returns a
``PermissionDecided``.
"""

from __future__ import annotations

import enum
import inspect
from collections.abc import Awaitable, Callable, Collection
from typing import Any

import attrs

from fsm_agent.core import texts
from fsm_agent.core.effects import AskPermission
from fsm_agent.core.events import DecisionSource, PermissionBehavior, PermissionDecided
from fsm_agent.runtime.tool import SAFETY_CHECK, PermissionCheck


class PermissionMode(enum.Enum):
    """Permission modes (SPEC §9.1, the external ones)."""

    DEFAULT = "default"
    ACCEPT_EDITS = "acceptEdits"
    BYPASS = "bypassPermissions"
    DONT_ASK = "dontAsk"


@attrs.frozen(kw_only=True)
class PermissionRequest:
    """What the ``ask`` callback is shown."""

    tool_name: str
    input: dict[str, Any]
    message: str = ""
    reason: str = ""


@attrs.frozen(kw_only=True)
class PermissionAnswer:
    """The user's answer; ``abort_turn`` ends the turn like a plain rejection (SPEC §9.6)."""

    allow: bool
    message: str = ""
    abort_turn: bool = False


AskCallback = Callable[
    [PermissionRequest], "PermissionAnswer | bool | Awaitable[PermissionAnswer | bool]"
]

_EDIT_TOOLS = frozenset({"Edit", "Write"})


@attrs.frozen(kw_only=True)
class PermissionPolicy:
    """Rules, mode and the ``ask`` callback."""

    mode: PermissionMode = PermissionMode.DEFAULT
    allow: Collection[str] = frozenset()
    deny: Collection[str] = frozenset()
    ask: AskCallback | None = None

    async def decide(self, effect: AskPermission, check: PermissionCheck) -> PermissionDecided:
        """Answer one ``AskPermission`` effect, given the tool's own opinion."""
        name = effect.tool_name

        def answer(
            allow: bool,
            source: DecisionSource,
            reason: str,
            message: str = "",
            *,
            abort: bool = False,
        ) -> PermissionDecided:
            return PermissionDecided(
                effect_id=effect.effect_id,
                behavior=PermissionBehavior.ALLOW if allow else PermissionBehavior.DENY,
                source=source,
                reason=reason,
                message=message,
                abort_turn=abort,
            )

        if name in self.deny:
            return answer(
                False,
                DecisionSource.RULE,
                f"deny rule {name}",
                texts.denied_by_rule(name),
            )
        if check.behavior == "deny":
            return answer(False, DecisionSource.TOOL, check.reason or "tool refused", check.message)
        safety = check.behavior == "ask" and check.reason == SAFETY_CHECK
        if not safety:
            if self.mode is PermissionMode.BYPASS:
                return answer(True, DecisionSource.MODE, "bypassPermissions mode")
            if name in self.allow:
                return answer(True, DecisionSource.RULE, f"allow rule {name}")
            if effect.hook_decision == "allow":
                return answer(
                    True, DecisionSource.HOOK, effect.hook_reason or "PreToolUse hook allowed"
                )
            if check.behavior == "allow" and effect.hook_decision != "ask":
                return answer(True, DecisionSource.TOOL, "the tool allows this call")
            if self.mode is PermissionMode.ACCEPT_EDITS and name in _EDIT_TOOLS:
                return answer(True, DecisionSource.MODE, "acceptEdits mode")
        source = DecisionSource.SAFETY_CHECK if safety else DecisionSource.USER
        if self.mode is PermissionMode.DONT_ASK or self.ask is None:
            why = "dontAsk mode" if self.mode is PermissionMode.DONT_ASK else "no one to ask"
            return answer(False, source, why, texts.not_granted(name, why))
        request = PermissionRequest(
            tool_name=name, input=effect.input, message=check.message, reason=check.reason
        )
        result = self.ask(request)
        if inspect.isawaitable(result):
            result = await result
        if isinstance(result, bool):
            result = PermissionAnswer(allow=result)
        reason = "user allowed" if result.allow else "user denied"
        return answer(result.allow, source, reason, result.message, abort=result.abort_turn)
