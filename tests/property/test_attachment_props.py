"""Attachments never split a tool_use from its tool_result (SPEC §12 invariant 6): wherever
the loop adds them, normalization (SPEC §8.1 steps 1 and 5) sends valid requests."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from fsm_agent.core import texts
from fsm_agent.core.messages import AssistantMessage, AttachmentKind, AttachmentMessage, Message
from fsm_agent.core.normalize import api_invariant_violations, normalize_for_api
from fsm_agent.runtime.agent import Agent
from fsm_agent.runtime.attachments import Attachment, AttachmentRequest, AttachmentTiming
from fsm_agent.runtime.tool import tool
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario
from fsm_agent.testing.transcripts import loop_transcripts


def _between_responses(transcript: list[Message]) -> list[int]:
    """Where the loop may add an attachment: never inside one model response (the driver
    answers ``FetchAttachments`` after the response and its tools, or before a prompt)."""
    places = []
    for place in range(len(transcript) + 1):
        before = {m.message_id for m in transcript[:place] if isinstance(m, AssistantMessage)}
        after = {m.message_id for m in transcript[place:] if isinstance(m, AssistantMessage)}
        if not before & after:
            places.append(place)
    return places


@st.composite
def with_attachments(draw: st.DrawFn) -> tuple[list[Message], list[str]]:
    """A loop transcript with attachments put between its responses, and their texts."""
    transcript = draw(loop_transcripts())
    kinds = st.sampled_from(
        [AttachmentKind.FILE, AttachmentKind.QUEUED_COMMAND, AttachmentKind.MEMORY]
    )
    added: list[str] = []
    for number in range(draw(st.integers(1, 4))):
        text = f"reminder {number}"
        where = draw(st.sampled_from(_between_responses(transcript)))
        attachment = AttachmentMessage(uuid=f"a{number}", kind=draw(kinds), text=text)
        transcript.insert(where, attachment)
        added.append(text)
    return transcript, added


def _texts(api: list[dict[str, object]]) -> str:
    return "\n".join(
        str(block.get("text", ""))
        for message in api
        for block in message["content"]  # type: ignore[union-attr]
        if isinstance(block, dict)
    )


@given(with_attachments())
def test_attachments_never_split_a_tool_use_from_its_result(
    case: tuple[list[Message], list[str]],
) -> None:
    """Wherever attachments sit, each tool_use is answered first thing in the next message."""
    transcript, _ = case
    api = normalize_for_api(transcript, strict=True)
    assert api_invariant_violations(api) == []


@given(with_attachments())
def test_every_attachment_reaches_the_request_as_a_reminder(
    case: tuple[list[Message], list[str]],
) -> None:
    """Each attachment's text is sent once, wrapped in ``<system-reminder>``."""
    transcript, added = case
    sent = _texts(normalize_for_api(transcript))
    for text in added:
        assert sent.count(texts.system_reminder(text)) == 1


class _Note:
    """Attaches one note at every attachment phase and before every prompt."""

    name = "note"
    timing = AttachmentTiming.EACH_PHASE

    async def collect(self, request: AttachmentRequest) -> Sequence[Attachment]:
        return [Attachment(text=f"note {request.user_turn}.{request.iteration}")]


@tool(name="Probe", description="Looks.", read_only=True, concurrency_safe=True)
async def _probe() -> str:
    return "seen"


_RESPONSES = st.lists(st.integers(0, 3), min_size=1, max_size=4)
"""Each response of a turn: that many Probe calls (0: a plain answer, which ends the turn)."""


@settings(max_examples=25)
@given(st.lists(_RESPONSES, min_size=1, max_size=3))
def test_every_request_of_a_session_with_attachments_is_valid(turns: list[list[int]]) -> None:
    """Through a whole session with a provider attaching at every phase, every request the
    model gets pairs each tool_use with its tool_result and carries the notes as reminders."""
    steps: list[dict[str, Any]] = []
    for responses in turns:
        for calls in responses:
            if calls:
                uses = [{"tool_use": {"name": "Probe", "input": {}}}] * calls
                steps.append({"content": uses})
        steps.append({"content": [{"text": "answered"}]})
    model = ScriptedModel(parse_scenario({"steps": steps}), keep_requests=64)
    agent = Agent(model=model, tools=[_probe], trace=False, attachments=[_Note()])

    async def talk() -> None:
        session = agent.session(changed_files=False)
        for number in range(len(turns)):
            await session.ask(f"question {number}")

    asyncio.run(talk())
    for request in model.requests:
        assert api_invariant_violations(request.messages) == []
        assert "<system-reminder>\nnote " in _texts(request.messages)
