"""Normalization for the API: one example per SPEC §8.1 step and §8.2 repair."""

from __future__ import annotations

import copy
import itertools
from typing import Any

import pytest

from fsm_agent.core import texts
from fsm_agent.core.messages import (
    ApiErrorKind,
    ApiErrorMessage,
    AssistantMessage,
    AttachmentKind,
    AttachmentMessage,
    ContentBlock,
    DocumentBlock,
    ImageBlock,
    Message,
    ProgressMessage,
    RedactedThinkingBlock,
    SystemMessage,
    TextBlock,
    ThinkingBlock,
    TombstoneMessage,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)
from fsm_agent.core.normalize import (
    MAX_MEDIA_ITEMS,
    api_invariant_violations,
    cap_media,
    ensure_tool_result_pairing,
    normalize_for_api,
)
from fsm_agent.errors import ModelProtocolError, UsageError

_ids = itertools.count()
_SOURCE = {"type": "base64", "media_type": "image/png", "data": "AAAA"}


def _uuid() -> str:
    return f"u{next(_ids)}"


def user(*blocks: ContentBlock | str, meta: bool = False, uuid: str | None = None) -> UserMessage:
    content = tuple(TextBlock(text=b) if isinstance(b, str) else b for b in blocks)
    return UserMessage(uuid=uuid or _uuid(), content=content, is_meta=meta)


def assistant(
    *blocks: ContentBlock | str, message_id: str = "", uuid: str | None = None
) -> AssistantMessage:
    content = tuple(TextBlock(text=b) if isinstance(b, str) else b for b in blocks)
    return AssistantMessage(uuid=uuid or _uuid(), message_id=message_id or _uuid(), content=content)


def use(tool_id: str, name: str = "Read") -> ToolUseBlock:
    return ToolUseBlock(id=tool_id, name=name, input={"path": tool_id})


def result(tool_id: str, content: Any = "ok", is_error: bool = False) -> ToolResultBlock:
    return ToolResultBlock(tool_use_id=tool_id, content=content, is_error=is_error)


def attachment(text: str) -> AttachmentMessage:
    return AttachmentMessage(uuid=_uuid(), kind=AttachmentKind.HOOK_ADDITIONAL_CONTEXT, text=text)


def t(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def tu(tool_id: str, name: str = "Read") -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": {"path": tool_id}}


def tr(tool_id: str, content: Any = "ok") -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tool_id, "content": content}


def missing(tool_id: str) -> dict[str, Any]:
    return {
        "type": "tool_result",
        "tool_use_id": tool_id,
        "content": texts.MISSING_TOOL_RESULT,
        "is_error": True,
    }


def reminder(text: str) -> dict[str, Any]:
    return t(texts.system_reminder(text))


def U(*content: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(content)}


def A(*content: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": list(content)}


def normalized(messages: list[Message], **kwargs: Any) -> list[dict[str, Any]]:
    api = normalize_for_api(messages, **kwargs)
    assert api_invariant_violations(api) == []
    return api


# --- block shapes -----------------------------------------------------------------------------


def test_blocks_are_rendered_in_api_shape() -> None:
    """Every block type becomes the API dict; is_error appears only when true."""
    thinking = ThinkingBlock(thinking="hmm", signature="sig")
    api = normalized(
        [
            user("look", ImageBlock(source=_SOURCE), DocumentBlock(source=_SOURCE)),
            assistant(thinking, RedactedThinkingBlock(data="enc"), "sure", use("a")),
            user(result("a", (TextBlock(text="x"), ImageBlock(source=_SOURCE)))),
        ]
    )
    assert api == [
        U(t("look"), {"type": "image", "source": _SOURCE}, {"type": "document", "source": _SOURCE}),
        A(
            {"type": "thinking", "thinking": "hmm", "signature": "sig"},
            {"type": "redacted_thinking", "data": "enc"},
            t("sure"),
            tu("a"),
        ),
        U(tr("a", [t("x"), {"type": "image", "source": _SOURCE}])),
    ]


# --- SPEC §8.1 ----------------------------------------------------------------------------------


def test_step1_attachment_bubbles_up_after_nearest_assistant() -> None:
    """SPEC §8.1 step 1: an attachment after a prompt moves above it, right after the assistant."""
    api = normalized(
        [user("first"), assistant("reply"), user("second"), attachment("ctx"), attachment("more")]
    )
    assert api == [U(t("first")), A(t("reply")), U(reminder("ctx"), reminder("more"), t("second"))]


def test_step1_attachment_lands_after_tool_results() -> None:
    """SPEC §8.1 step 1: an attachment stops at a tool_result user message and follows it."""
    api = normalized(
        [user("go"), assistant(use("a")), user(result("a")), user("next"), attachment("ctx")]
    )
    assert api == [U(t("go")), A(tu("a")), U(tr("a"), reminder("ctx"), t("next"))]


def test_step1_leftover_attachments_go_to_the_top() -> None:
    """SPEC §8.1 step 1: with no assistant above, attachments go to the very start."""
    api = normalized([user("hello"), attachment("early")])
    assert api == [U(reminder("early"), t("hello"))]


def test_blank_attachment_is_dropped() -> None:
    """An attachment with no text adds no empty reminder."""
    assert normalized([user("hi"), attachment("  ")]) == [U(t("hi"))]


def test_tombstone_withdraws_its_target() -> None:
    """A tombstone removes the message it targets, and itself (SPEC §3 fallback)."""
    partial = assistant(ThinkingBlock(thinking="half", signature="bad"), use("x"), uuid="dead")
    api = normalized(
        [user("go"), partial, TombstoneMessage(uuid="ts", target_uuid="dead"), assistant("done")]
    )
    assert api == [U(t("go")), A(t("done"))]


def test_step3_media_error_strips_nearest_meta_user_media() -> None:
    """SPEC §8.1 step 3: a media-too-large error strips media from the preceding meta user."""
    image = ImageBlock(source=_SOURCE)
    api = normalized(
        [
            user("see", image),
            assistant("ok"),
            user("pasted", image, DocumentBlock(source=_SOURCE), meta=True),
            ApiErrorMessage(uuid=_uuid(), kind=ApiErrorKind.MEDIA_TOO_LARGE, text="too big"),
        ]
    )
    assert api == [U(t("see"), {"type": "image", "source": _SOURCE}), A(t("ok")), U(t("pasted"))]


def test_step3_other_api_errors_strip_nothing() -> None:
    """SPEC §8.1 step 3 applies to media errors only."""
    image = ImageBlock(source=_SOURCE)
    api = normalized(
        [
            user("pasted", image, meta=True),
            ApiErrorMessage(uuid=_uuid(), kind=ApiErrorKind.PROMPT_TOO_LONG, text="long"),
        ]
    )
    assert api == [U(t("pasted"), {"type": "image", "source": _SOURCE})]


def test_step4_transcript_only_messages_are_dropped() -> None:
    """SPEC §8.1 step 4: progress, system notices and API errors never reach the API."""
    api = normalized(
        [
            user("go"),
            ProgressMessage(uuid=_uuid(), tool_use_id="a", text="50%"),
            SystemMessage(uuid=_uuid(), subtype="warning", text="careful"),
            assistant("done"),
            ApiErrorMessage(uuid=_uuid(), kind=ApiErrorKind.OTHER, text="boom", withheld=True),
        ]
    )
    assert api == [U(t("go")), A(t("done"))]


def test_step5_consecutive_users_merge_with_results_first() -> None:
    """SPEC §8.1 step 5: adjacent users merge and tool_results are hoisted to the front."""
    api = normalized(
        [
            user("go"),
            assistant(use("a"), use("b")),
            user(result("a")),
            user("wait"),
            user(result("b")),
        ]
    )
    assert api == [U(t("go")), A(tu("a"), tu("b")), U(tr("a"), tr("b"), t("wait"))]


def test_step5_split_response_merges_over_interleaved_results() -> None:
    """SPEC §8.1 step 5: same-id assistants merge walking back over tool_result users."""
    api = normalized(
        [
            user("go"),
            assistant(ThinkingBlock(thinking="plan", signature="s"), message_id="m1"),
            assistant(use("a"), message_id="m1"),
            user(result("a")),
            assistant(use("b"), message_id="m1"),
            user(result("b")),
        ]
    )
    assert api == [
        U(t("go")),
        A({"type": "thinking", "thinking": "plan", "signature": "s"}, tu("a"), tu("b")),
        U(tr("a"), tr("b")),
    ]


def test_step5_merge_walks_over_other_responses() -> None:
    """SPEC §8.1 step 5: the walk back may pass assistants with another message_id."""
    api = normalized(
        [
            user("go"),
            assistant("one", message_id="m1"),
            assistant("two", message_id="m2"),
            assistant("three", message_id="m1"),
        ]
    )
    assert api == [U(t("go")), A(t("one"), t("three"), t("two"))]


def test_step5_merge_stops_at_a_user_prompt() -> None:
    """SPEC §8.1 step 5: a user turn with text is a barrier for merging by message_id."""
    api = normalized(
        [
            user("go"),
            assistant("one", message_id="m1"),
            user("stop"),
            assistant("two", message_id="m1"),
        ]
    )
    assert api == [U(t("go")), A(t("one")), U(t("stop")), A(t("two"))]


def test_assistant_only_blocks_in_user_messages_are_dropped() -> None:
    """Blocks of the wrong role (a tool_use inside a user message) never reach the API."""
    api = normalized([user("go", use("x")), assistant("ok", result("y"))])
    assert api == [U(t("go")), A(t("ok"))]


def test_step7_orphaned_thinking_only_assistant_is_dropped() -> None:
    """SPEC §8.1 step 7: a thinking-only assistant with no merged sibling disappears."""
    api = normalized(
        [
            user("go"),
            assistant(ThinkingBlock(thinking="lost", signature="s"), message_id="m1"),
            user("again"),
        ]
    )
    assert api == [U(t("go"), t("again"))]


def test_step8_trailing_thinking_stripped_from_final_assistant() -> None:
    """SPEC §8.1 step 8: the final assistant message may not end with thinking."""
    thinking = ThinkingBlock(thinking="more", signature="s")
    api = normalized([user("go"), assistant("answer", thinking, message_id="m1")])
    assert api == [U(t("go")), A(t("answer"))]


def test_step8_thinking_kept_when_not_final() -> None:
    """SPEC §8.1 step 8 touches the final assistant only; earlier thinking is kept."""
    thinking = ThinkingBlock(thinking="why", signature="s")
    api = normalized(
        [user("go"), assistant(thinking, use("a"), message_id="m1"), user(result("a"))]
    )
    assert api[1] == A({"type": "thinking", "thinking": "why", "signature": "s"}, tu("a"))


def test_step9_whitespace_only_assistant_dropped_and_users_remerged() -> None:
    """SPEC §8.1 step 9: a whitespace-only assistant goes and its neighbours merge."""
    api = normalized([user("one"), assistant(" \n "), user("two")])
    assert api == [U(t("one"), t("two"))]


def test_step10_non_final_empty_assistant_gets_placeholder() -> None:
    """SPEC §8.1 step 10: an empty assistant in the middle gets placeholder text."""
    api = normalized([user("one"), assistant(), user("two")])
    assert api == [U(t("one")), A(t(texts.EMPTY_ASSISTANT_PLACEHOLDER)), U(t("two"))]


def test_step10_final_empty_assistant_is_dropped() -> None:
    """SPEC §8.1 step 10: an empty final assistant is simply left out."""
    assert normalized([user("one"), assistant()]) == [U(t("one"))]


def test_step12_error_result_keeps_text_only() -> None:
    """SPEC §8.1 step 12: an is_error tool_result drops media and joins its texts."""
    content = (TextBlock(text="failed"), ImageBlock(source=_SOURCE), TextBlock(text="trace"))
    api = normalized([user("go"), assistant(use("a")), user(result("a", content, is_error=True))])
    assert api[2] == U({**tr("a", "failed\ntrace"), "is_error": True})


def test_whitespace_text_blocks_are_removed() -> None:
    """Whitespace-only text blocks go from both roles; the API refuses them."""
    api = normalized([user("go", "  "), assistant(" ", use("a")), user(result("a"), "\n")])
    assert api == [U(t("go")), A(tu("a")), U(tr("a"))]


# --- SPEC §8.2 ----------------------------------------------------------------------------------


def test_pairing_orphan_result_in_first_message_leaves_marker() -> None:
    """SPEC §8.2: a first user message emptied of orphan results gets the orphan marker."""
    api = normalized([user(result("gone")), assistant("hi")])
    assert api == [U(t(texts.ORPHANED_TOOL_RESULT_REMOVED)), A(t("hi"))]


def test_pairing_result_for_an_older_assistant_is_orphaned() -> None:
    """SPEC §8.2: a tool_result must answer the immediately preceding assistant message."""
    api = normalized(
        [
            user("go"),
            assistant(use("a")),
            user(result("a")),
            assistant(use("b")),
            user(result("a", "again"), result("b")),
        ]
    )
    assert api[4] == U(tr("b"))


def test_pairing_duplicate_tool_use_id_is_removed() -> None:
    """SPEC §8.2: a later tool_use reusing an id is removed (with its second answer)."""
    api = normalized(
        [
            user("go"),
            assistant(use("a")),
            user(result("a")),
            assistant("again", use("a")),
            user(result("a"), "next"),
        ]
    )
    assert api[3] == A(t("again"))
    assert api[4] == U(t("next"))


def test_pairing_unanswered_tool_use_gets_missing_result() -> None:
    """SPEC §8.2: a tool_use not answered in the next user message gets an error result first."""
    api = normalized([user("go"), assistant(use("a"), use("b")), user(result("b"), "and?")])
    assert api[2] == U(missing("a"), tr("b"), t("and?"))


def test_pairing_tool_use_at_the_end_is_answered() -> None:
    """SPEC §8.2: tool_uses ending the transcript are answered by an added user message."""
    api = normalized([user("go"), assistant("let me", use("a"))])
    assert api == [U(t("go")), A(t("let me"), tu("a")), U(missing("a"))]


def test_pairing_duplicate_result_is_removed() -> None:
    """SPEC §8.2: a second tool_result for the same tool_use is removed."""
    api = normalized([user("go"), assistant(use("a")), user(result("a"), result("a", "dup"))])
    assert api[2] == U(tr("a"))


def test_pairing_emptied_user_gets_placeholder() -> None:
    """SPEC §8.2: a user message emptied by the repair keeps a placeholder (alternation)."""
    api = normalized([user("go"), assistant("hi"), user(result("nope")), assistant("bye")])
    assert api == [U(t("go")), A(t("hi")), U(t(texts.EMPTY_USER_PLACEHOLDER)), A(t("bye"))]


def test_pairing_first_message_must_be_user() -> None:
    """SPEC §8.2: a transcript starting with the assistant gets a leading user message."""
    api = normalized([assistant("hello")])
    assert api == [U(t(texts.CONVERSATION_START_PLACEHOLDER)), A(t("hello"))]


def test_empty_transcript_gives_one_placeholder_user() -> None:
    """Even an empty transcript yields a valid request (one user message)."""
    assert normalized([]) == [U(t(texts.CONVERSATION_START_PLACEHOLDER))]


@pytest.mark.parametrize(
    "messages",
    [
        pytest.param([user(result("x"))], id="orphan result"),
        pytest.param(
            [user("go"), assistant(use("a")), user(result("a")), assistant(use("a"))],
            id="duplicate tool_use id",
        ),
        pytest.param([user("go"), assistant(use("a")), user("no answer")], id="unanswered"),
        pytest.param([user("go"), assistant(use("a"))], id="unanswered at the end"),
        pytest.param(
            [user("go"), assistant(use("a")), user(result("a"), result("a"))], id="duplicate result"
        ),
    ],
)
def test_strict_mode_raises_instead_of_repairing(messages: list[Message]) -> None:
    """SPEC §8.2 strict mode: every pairing defect raises ModelProtocolError."""
    with pytest.raises(ModelProtocolError, match="strict pairing"):
        normalize_for_api(messages, strict=True)


def test_strict_mode_accepts_a_valid_transcript() -> None:
    """SPEC §8.2 strict mode: a well-paired transcript normalizes as in repair mode."""
    messages: list[Message] = [
        user("go"),
        assistant(use("a"), message_id="m"),
        user(result("a")),
        assistant("done"),
    ]
    assert normalize_for_api(messages, strict=True) == normalize_for_api(messages)


def test_ensure_pairing_does_not_modify_its_input() -> None:
    """ensure_tool_result_pairing builds new messages; the caller's dicts stay as they were."""
    api = [U(tr("x"), t("go")), A(tu("a"), tu("a")), A(t("more"))]
    before = copy.deepcopy(api)
    repaired = ensure_tool_result_pairing(api)
    assert api == before
    assert repaired == [U(t("go")), A(tu("a"), t("more")), U(missing("a"))]


def test_ensure_pairing_accepts_string_content_and_drops_false_is_error() -> None:
    """String content becomes a text block; is_error false is left out of the result dict."""
    api = ensure_tool_result_pairing(
        [{"role": "user", "content": "hi"}, A(tu("a")), U({**tr("a"), "is_error": False})]
    )
    assert api == [U(t("hi")), A(tu("a")), U(tr("a"))]


def test_ensure_pairing_refuses_unknown_role() -> None:
    """A role other than user/assistant is a usage error, not something to repair."""
    with pytest.raises(UsageError, match="role"):
        ensure_tool_result_pairing([{"role": "system", "content": "x"}])


# --- media cap ----------------------------------------------------------------------------------


def test_media_cap_drops_the_oldest() -> None:
    """SPEC §8.1 tail: beyond 100 media items the oldest are replaced by a short note."""
    image = ImageBlock(source=_SOURCE)
    messages: list[Message] = [user("a", *([image] * 60)), assistant("ok")]
    messages += [user("b", *([image] * 50))]
    api = normalized(messages)
    first = api[0]["content"]
    assert first[1:11] == [t(texts.media_omitted("image"))] * 10
    assert first[11] == {"type": "image", "source": _SOURCE}
    assert sum(b["type"] == "image" for m in api for b in m["content"]) == MAX_MEDIA_ITEMS


def test_media_cap_reaches_into_tool_results() -> None:
    """Images inside tool_result content count towards the cap and are dropped oldest first."""
    part = {"type": "image", "source": _SOURCE}
    api = [U(t("go")), A(tu("a")), U(tr("a", [part, part, t("x")]), part)]
    assert cap_media(api, limit=1) == [
        U(t("go")),
        A(tu("a")),
        U(tr("a", [t(texts.media_omitted("image"))] * 2 + [t("x")]), part),
    ]


def test_media_cap_returns_input_when_under_limit() -> None:
    """Under the cap nothing is copied or changed."""
    api = [U(t("go"))]
    assert cap_media(api) is api


# --- the checker --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("api", "fragment"),
    [
        ([], "no messages"),
        ([A(t("x"))], "first message must be a user"),
        ([U(t("a")), U(t("b"))], "roles must alternate"),
        ([U(t("go")), A(tu("a")), U(t("x"))], "not answered"),
        ([U(t("go")), A(tu("a"))], "never answered"),
        ([U(tr("x"))], "answers no tool_use"),
        ([U(t("go")), A(tu("a")), U(tr("a"), tr("a"))], "more than once"),
        ([U(t("go")), A(tu("a")), U(t("x"), tr("a"))], "after other content"),
        ([U(t("go")), A(tu("a")), U(tr("a")), A(tu("a")), U(tr("a"))], "not unique"),
        (
            [U(t("go")), A(t("x"), {"type": "thinking", "thinking": "", "signature": ""})],
            "ends with thinking",
        ),
        ([U(t("go")), A()], "content is empty"),
        ([U(t("go")), A(t("  "))], "only whitespace"),
        ([U(t(" "))], "whitespace-only"),
        (
            [
                U(t("go")),
                A(tu("a")),
                U({**tr("a", [{"type": "image", "source": {}}]), "is_error": True}),
            ],
            "non-text",
        ),
        ([U(*[{"type": "image", "source": {}}] * 101)], "media items"),
        ([U(tu("a"))], "does not belong"),
        ([{"role": "system", "content": []}], "unknown role"),
    ],
)
def test_checker_reports_each_violation(api: list[dict[str, Any]], fragment: str) -> None:
    """api_invariant_violations names every DESIGN §6 invariant 8 violation."""
    problems = api_invariant_violations(api)
    assert any(fragment in problem for problem in problems), problems


def test_checker_accepts_valid_messages() -> None:
    """A valid request has no violations."""
    api = [U(t("go")), A(t("x"), tu("a")), U(tr("a"), t("ok")), A(t("done"))]
    assert api_invariant_violations(api) == []


# --- scale ----------------------------------------------------------------------------------------


def test_long_transcript_normalizes_in_one_pass() -> None:
    """A 30 000-message transcript with split responses normalizes correctly (linear passes)."""
    messages: list[Message] = [user("go")]
    for n in range(6000):
        messages.append(assistant(ThinkingBlock(thinking="t", signature="s"), message_id=f"m{n}"))
        messages.append(assistant(use(f"a{n}"), message_id=f"m{n}"))
        messages.append(user(result(f"a{n}")))
        messages.append(assistant(use(f"b{n}"), message_id=f"m{n}"))
        messages.append(user(result(f"b{n}")))
    api = normalized(messages)
    assert len(api) == 1 + 2 * 6000
