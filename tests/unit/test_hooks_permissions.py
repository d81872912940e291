"""``Hooks.run`` aggregation (SPEC §6.1) and ``PermissionPolicy.decide`` (SPEC §9, DESIGN §6.7)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from fsm_agent.core.effects import AskPermission, HookEvent
from fsm_agent.core.events import (
    DecisionSource,
    HookDecision,
    HookOutcome,
    PermissionBehavior,
    PermissionDecided,
)
from fsm_agent.errors import ConfigError
from fsm_agent.runtime.hooks import HookInput, Hooks
from fsm_agent.runtime.permissions import (
    CallFacts,
    PermissionAnswer,
    PermissionMode,
    PermissionPolicy,
    PermissionRequest,
)
from fsm_agent.runtime.tool import SAFETY_CHECK, PermissionCheck, Tool
from fsm_agent.toolbox.edit import Edit
from fsm_agent.toolbox.write import Write

PRE = HookInput(hook_event=HookEvent.PRE_TOOL_USE, tool_name="Write", tool_input={"x": 1})


def run_hooks(hooks: Hooks, hook_input: HookInput = PRE) -> HookOutcome:
    return asyncio.run(hooks.run(hook_input))


def decision(value: HookDecision, reason: str = "") -> Any:
    """A hook that always returns ``value`` with ``reason``."""
    return lambda _: HookOutcome(decision=value, decision_reason=reason)


# --- Hooks.run -------------------------------------------------------------------------------


def test_no_hooks_give_an_empty_outcome() -> None:
    """With no hooks registered (or only hooks returning None) the outcome says nothing."""
    assert run_hooks(Hooks()) == HookOutcome()
    assert run_hooks(Hooks(pre_tool_use=[lambda _: None])) == HookOutcome()


@pytest.mark.parametrize(
    ("order", "expected", "reason"),
    [
        ((HookDecision.ALLOW, HookDecision.DENY, HookDecision.ASK), HookDecision.DENY, "deny"),
        ((HookDecision.DENY, HookDecision.ALLOW), HookDecision.DENY, "deny"),
        ((HookDecision.ALLOW, HookDecision.ASK), HookDecision.ASK, "ask"),
        ((HookDecision.ASK, HookDecision.ALLOW), HookDecision.ASK, "ask"),
        ((HookDecision.ALLOW, HookDecision.ALLOW), HookDecision.ALLOW, "allow"),
    ],
)
def test_decisions_combine_deny_over_ask_over_allow(
    order: tuple[HookDecision, ...], expected: HookDecision, reason: str
) -> None:
    """Whatever the order, deny beats ask beats allow, and the winner's reason is kept."""
    hooks = Hooks(pre_tool_use=[decision(d, d.value) for d in order])
    outcome = run_hooks(hooks)
    assert outcome.decision is expected
    assert outcome.decision_reason == reason


def test_blocking_errors_context_and_messages_accumulate_in_order() -> None:
    """Blocking errors, additional context and system messages of every hook are all kept."""
    hooks = Hooks(
        stop=[
            lambda _: HookOutcome(blocking_errors=("first",), additional_context=("c1",)),
            lambda _: None,
            lambda _: HookOutcome(blocking_errors=("second", "third"), system_messages=("m",)),
        ]
    )
    outcome = run_hooks(hooks, HookInput(hook_event=HookEvent.STOP))
    assert outcome.blocking_errors == ("first", "second", "third")
    assert outcome.additional_context == ("c1",)
    assert outcome.system_messages == ("m",)
    assert not outcome.prevent_continuation


def test_any_prevent_continuation_stops_with_the_first_reason() -> None:
    """One hook preventing continuation is enough; the first stop reason given is kept."""
    hooks = Hooks(
        post_tool_use=[
            lambda _: HookOutcome(),
            lambda _: HookOutcome(prevent_continuation=True, stop_reason="enough"),
            lambda _: HookOutcome(prevent_continuation=True, stop_reason="later"),
        ]
    )
    outcome = run_hooks(hooks, HookInput(hook_event=HookEvent.POST_TOOL_USE))
    assert outcome.prevent_continuation
    assert outcome.stop_reason == "enough"


def test_a_raising_hook_becomes_a_system_message_and_does_not_block() -> None:
    """A hook that raises is reported as a system message; the other hooks still run."""
    ran: list[str] = []

    def broken(_: HookInput) -> HookOutcome:
        raise RuntimeError("disk on fire")

    def fine(_: HookInput) -> HookOutcome:
        ran.append("fine")
        return HookOutcome(decision=HookDecision.ALLOW)

    outcome = run_hooks(Hooks(pre_tool_use=[broken, fine]))
    assert ran == ["fine"]
    assert outcome.blocking_errors == ()
    assert outcome.decision is HookDecision.ALLOW
    [message] = outcome.system_messages
    assert "PreToolUse" in message
    assert "broken" in message
    assert "RuntimeError: disk on fire" in message


def test_a_raising_async_hook_becomes_a_system_message() -> None:
    """An async hook that raises while awaited is reported, not propagated."""

    async def broken(_: HookInput) -> HookOutcome:
        await asyncio.sleep(0)
        raise ValueError("bad")

    outcome = run_hooks(Hooks(stop=[broken]), HookInput(hook_event=HookEvent.STOP))
    assert outcome.blocking_errors == ()
    assert "ValueError: bad" in outcome.system_messages[0]


def test_hooks_of_one_event_run_concurrently_and_combine_in_registration_order() -> None:
    """Hooks of one event run at once (SPEC §6.1); outcomes combine in registration order."""
    order: list[str] = []

    async def slow(_: HookInput) -> HookOutcome:
        order.append("slow start")
        await asyncio.sleep(0.01)
        order.append("slow end")
        return HookOutcome(blocking_errors=("slow",))

    def quick(_: HookInput) -> HookOutcome:
        order.append("quick")
        return HookOutcome(blocking_errors=("quick",))

    outcome = run_hooks(Hooks(stop=[slow, quick]), HookInput(hook_event=HookEvent.STOP))
    assert order == ["slow start", "quick", "slow end"]
    assert outcome.blocking_errors == ("slow", "quick")


def test_hooks_receive_their_input_and_only_run_for_their_event() -> None:
    """A hook sees the HookInput; hooks of other hook points do not run."""
    seen: list[HookInput] = []

    def pre(hook_input: HookInput) -> None:
        seen.append(hook_input)

    def stop(_: HookInput) -> HookOutcome:
        raise AssertionError("a Stop hook ran for PreToolUse")

    run_hooks(Hooks(pre_tool_use=[pre], stop=[stop]))
    assert seen == [PRE]
    assert run_hooks(Hooks(stop=[stop]), PRE) == HookOutcome()


def test_updated_input_comes_from_a_hook_that_did_not_deny() -> None:
    """A denying hook's updated input is ignored; another hook's is kept."""
    hooks = Hooks(
        pre_tool_use=[
            lambda _: HookOutcome(decision=HookDecision.ALLOW, updated_input={"x": 2}),
            lambda _: HookOutcome(decision=HookDecision.DENY, updated_input={"x": 3}),
        ]
    )
    outcome = run_hooks(hooks)
    assert outcome.decision is HookDecision.DENY
    assert outcome.updated_input == {"x": 2}


# --- PermissionPolicy.decide ---------------------------------------------------------------


class Asker:
    """An ask callback that records its requests and answers from a fixed answer."""

    def __init__(self, answer: PermissionAnswer | bool = True) -> None:
        self.answer = answer
        self.requests: list[PermissionRequest] = []

    def __call__(self, request: PermissionRequest) -> PermissionAnswer | bool:
        self.requests.append(request)
        return self.answer


def ask_effect(
    tool_name: str = "Write", *, hook_decision: str | None = None, hook_reason: str = ""
) -> AskPermission:
    return AskPermission(
        effect_id="e7",
        call_id="toolu_001",
        tool_name=tool_name,
        input={"file_path": "f.txt"},
        hook_decision=hook_decision,
        hook_reason=hook_reason,
    )


def decide(
    policy: PermissionPolicy,
    check: PermissionCheck | None = None,
    effect: AskPermission | None = None,
) -> PermissionDecided:
    return asyncio.run(
        policy.decide(
            effect if effect is not None else ask_effect(),
            check if check is not None else PermissionCheck(behavior="passthrough"),
        )
    )


SAFETY = PermissionCheck(behavior="ask", message="protected path", reason=SAFETY_CHECK)


@pytest.mark.parametrize("mode", list(PermissionMode))
@pytest.mark.parametrize(
    "check",
    [PermissionCheck(behavior="allow"), PermissionCheck(behavior="passthrough"), SAFETY],
    ids=["tool-allows", "passthrough", "safety-check"],
)
def test_deny_rule_beats_everything(mode: PermissionMode, check: PermissionCheck) -> None:
    """A deny rule denies in every mode, over an allow rule, a hook allow and the tool's allow."""
    asker = Asker(True)
    policy = PermissionPolicy(mode=mode, deny={"Write"}, allow={"Write"}, ask=asker)
    decided = decide(policy, check, ask_effect(hook_decision="allow"))
    assert decided.behavior is PermissionBehavior.DENY
    assert decided.source is DecisionSource.RULE
    assert decided.effect_id == "e7"
    assert "denied" in decided.message
    assert asker.requests == []


@pytest.mark.parametrize("answer", [True, False])
def test_safety_check_asks_even_in_bypass_mode(answer: bool) -> None:
    """A safety-checked path asks the user in bypassPermissions mode (and with an allow rule)."""
    asker = Asker(answer)
    policy = PermissionPolicy(mode=PermissionMode.BYPASS, allow={"Write"}, ask=asker)
    decided = decide(policy, SAFETY, ask_effect(hook_decision="allow"))
    assert [(r.tool_name, r.reason, r.message) for r in asker.requests] == [
        ("Write", SAFETY_CHECK, "protected path")
    ]
    assert decided.behavior is (PermissionBehavior.ALLOW if answer else PermissionBehavior.DENY)
    assert decided.source is DecisionSource.SAFETY_CHECK


def test_safety_check_without_anyone_to_ask_is_denied() -> None:
    """A safety check in bypass mode with no callback is denied (no one to ask), never allowed."""
    decided = decide(PermissionPolicy(mode=PermissionMode.BYPASS), SAFETY)
    assert decided.behavior is PermissionBehavior.DENY
    assert decided.source is DecisionSource.NO_ONE_TO_ASK
    assert "protected path" in decided.reason


@pytest.mark.parametrize("check", [PermissionCheck(behavior="passthrough"), SAFETY])
def test_dont_ask_never_prompts_and_denies(check: PermissionCheck) -> None:
    """dontAsk denies what would need a prompt, without calling the ask callback."""

    def ask(request: PermissionRequest) -> bool:
        raise AssertionError("dontAsk must never prompt")

    decided = decide(PermissionPolicy(mode=PermissionMode.DONT_ASK, ask=ask), check)
    assert decided.behavior is PermissionBehavior.DENY
    assert "dontAsk" in decided.reason


def test_dont_ask_still_allows_what_needs_no_prompt() -> None:
    """dontAsk only refuses prompts: an allow rule or a tool's allow still allows."""
    policy = PermissionPolicy(mode=PermissionMode.DONT_ASK, allow={"Write"})
    assert decide(policy).behavior is PermissionBehavior.ALLOW
    read = decide(
        PermissionPolicy(mode=PermissionMode.DONT_ASK),
        PermissionCheck(behavior="allow"),
        ask_effect("Read"),
    )
    assert read.behavior is PermissionBehavior.ALLOW


@pytest.mark.parametrize("tool", [Edit(), Write()], ids=["Edit", "Write"])
def test_accept_edits_allows_file_edits(tool: Tool[Any], tmp_path: Path) -> None:
    """acceptEdits allows Edit and Write inside the working folder without asking."""
    asker = Asker(False)
    facts = CallFacts(tool=tool, cwd=tmp_path, target=tmp_path / "f.txt")
    decided = asyncio.run(
        PermissionPolicy(mode=PermissionMode.ACCEPT_EDITS, ask=asker).decide(
            ask_effect(tool.name), PermissionCheck(behavior="passthrough"), facts
        )
    )
    assert decided.behavior is PermissionBehavior.ALLOW
    assert decided.source is DecisionSource.MODE
    assert asker.requests == []


def test_accept_edits_does_not_allow_bash_or_protected_paths() -> None:
    """acceptEdits leaves Bash to the callback, and still asks for a safety-checked Write."""
    asker = Asker(False)
    policy = PermissionPolicy(mode=PermissionMode.ACCEPT_EDITS, ask=asker)
    assert decide(policy, effect=ask_effect("Bash")).behavior is PermissionBehavior.DENY
    assert decide(policy, SAFETY).behavior is PermissionBehavior.DENY
    assert [r.tool_name for r in asker.requests] == ["Bash", "Write"]


def test_bypass_mode_allows_without_asking() -> None:
    """bypassPermissions allows an ordinary call without a prompt."""
    asker = Asker(False)
    decided = decide(PermissionPolicy(mode=PermissionMode.BYPASS, ask=asker))
    assert decided.behavior is PermissionBehavior.ALLOW
    assert decided.source is DecisionSource.MODE
    assert asker.requests == []


def test_allow_rule_allows() -> None:
    """An allow rule on the tool name allows without a prompt and says so."""
    decided = decide(PermissionPolicy(allow={"Write"}))
    assert decided.behavior is PermissionBehavior.ALLOW
    assert decided.source is DecisionSource.RULE
    assert "allow rule" in decided.reason


def test_a_lone_string_is_one_rule_not_a_set_of_letters() -> None:
    """``deny="Write"`` (a string where a set goes) denies Write, as ``deny={"Write"}`` does:
    it is not read as the rules W, r, i, t and e."""
    policy = PermissionPolicy(deny="Write", allow="Read", ask_rules="Edit")
    assert [(rule.tool, rule.behavior.value) for rule in policy.rule_set.rules] == [
        ("Write", "deny"),
        ("Edit", "ask"),
        ("Read", "allow"),
    ]
    assert decide(policy).behavior is PermissionBehavior.DENY


@pytest.mark.parametrize("ask", [True, "y", 1])
def test_an_ask_that_cannot_be_called_is_refused_when_the_policy_is_made(ask: Any) -> None:
    """``ask=True`` reads as "ask me" but cannot answer: refused at once, naming ``ask``,
    instead of failing the first question of a run."""
    with pytest.raises(ConfigError, match=r"^ask must be a callable"):
        PermissionPolicy(ask=ask)


def test_a_lone_hook_is_one_hook_and_a_value_that_is_neither_is_refused() -> None:
    """``Hooks(stop=check)`` registers ``check`` (as ``[check]`` would); a value that is
    neither a hook nor a list of them is refused naming what a hook event takes."""

    def check(_: HookInput) -> HookOutcome:
        return HookOutcome(decision=HookDecision.DENY, decision_reason="lone")

    assert run_hooks(Hooks(pre_tool_use=check)).decision is HookDecision.DENY
    with pytest.raises(ConfigError, match="a hook event takes a list of callables"):
        Hooks(stop=42)  # type: ignore[arg-type]


def test_hook_allow_allows() -> None:
    """A PreToolUse hook's allow allows, with the hook's reason."""
    decided = decide(
        PermissionPolicy(), effect=ask_effect(hook_decision="allow", hook_reason="trusted")
    )
    assert decided.behavior is PermissionBehavior.ALLOW
    assert decided.source is DecisionSource.HOOK
    assert decided.reason == "trusted"


def test_hook_ask_overrides_the_tools_allow() -> None:
    """A PreToolUse hook's ask makes even a tool-allowed call go to the callback."""
    asker = Asker(False)
    decided = decide(
        PermissionPolicy(ask=asker),
        PermissionCheck(behavior="allow"),
        ask_effect("Read", hook_decision="ask"),
    )
    assert decided.behavior is PermissionBehavior.DENY
    assert decided.source is DecisionSource.USER
    assert [r.tool_name for r in asker.requests] == ["Read"]


def test_tool_allow_and_tool_deny_are_followed() -> None:
    """The tool's own allow allows; its deny denies with its message, even in bypass mode."""
    allowed = decide(PermissionPolicy(), PermissionCheck(behavior="allow"))
    assert (allowed.behavior, allowed.source) == (PermissionBehavior.ALLOW, DecisionSource.TOOL)
    refused = decide(
        PermissionPolicy(mode=PermissionMode.BYPASS),
        PermissionCheck(behavior="deny", message="outside the working directory"),
    )
    assert (refused.behavior, refused.source) == (PermissionBehavior.DENY, DecisionSource.TOOL)
    assert refused.message == "outside the working directory"


def test_no_callback_denies() -> None:
    """In default mode, with no callback, a call that needs a prompt is denied."""
    decided = decide(PermissionPolicy())
    assert decided.behavior is PermissionBehavior.DENY
    assert decided.source is DecisionSource.NO_ONE_TO_ASK
    assert "no one to ask" in decided.reason
    assert "user" not in decided.reason


def test_callback_answer_carries_message_and_abort() -> None:
    """A PermissionAnswer's message and abort_turn reach the decision."""
    asker = Asker(PermissionAnswer(allow=False, message="not today", abort_turn=True))
    decided = decide(PermissionPolicy(ask=asker))
    assert decided.behavior is PermissionBehavior.DENY
    assert decided.message == "not today"
    assert decided.abort_turn
    assert asker.requests == [
        PermissionRequest(
            tool_name="Write",
            input={"file_path": "f.txt"},
            message="",
            reason="tool",
            suggested_rules=("Write",),
        )
    ]


def test_async_callback_is_awaited() -> None:
    """An async ask callback is awaited."""

    async def ask(request: PermissionRequest) -> PermissionAnswer:
        await asyncio.sleep(0)
        return PermissionAnswer(allow=True)

    decided = decide(PermissionPolicy(ask=ask))
    assert decided.behavior is PermissionBehavior.ALLOW
    assert decided.reason == "user allowed"
