"""A turn's starting transcript is written with each message dumped once per conversation."""

from __future__ import annotations

import gc
import io
import weakref

from test_trace_support import CONFIG, TOOLS

from fsm_agent.core import events as ev
from fsm_agent.core.messages import (
    AssistantMessage,
    Message,
    TextBlock,
    ToolUseBlock,
    UserMessage,
)
from fsm_agent.testing.transcripts import tool_round
from fsm_agent.trace import message_dumps, records
from fsm_agent.trace.writer import TraceWriter

SECRET = "sk-ant-api03-abcdefghijklmnop"


def _writer(target: io.BytesIO) -> TraceWriter:
    return TraceWriter(target, config=CONFIG, tools=TOOLS, table_digest="d", secrets=[SECRET])


def _conversation(*, leak: bool = False) -> list[tuple[Message, ...]]:
    """The transcripts three turns start from, each the last one plus new messages (the same
    objects), with a sensitive key among them (and with ``leak`` a secret too)."""
    secretive = AssistantMessage(
        uuid="k",
        message_id="msg_k",
        content=(ToolUseBlock(id="toolu_k", name="Login", input={"password": "hunter2"}),),
    )
    leaky = UserMessage(uuid="s", content=(TextBlock(text=f"my key is {SECRET}"),))
    first: tuple[Message, ...] = (UserMessage(uuid="p", content=(TextBlock(text="go"),)),)
    second = (*first, *tool_round(1), *([leaky] if leak else []))
    third = (*second, secretive, *tool_round(2))
    return [first, second, third]


def _event_lines(target: io.BytesIO) -> list[bytes]:
    return [line for line in target.getvalue().splitlines() if b'"record":"event"' in line]


def test_turn_started_bytes_equal_the_uncached_record() -> None:
    """Each TurnStarted line, memo cold or warm, is byte for byte the generic event record."""
    message_dumps._memo.clear()
    cached, generic = io.BytesIO(), io.BytesIO()
    with _writer(cached) as fast, _writer(generic) as slow:
        for messages in [*_conversation(), *_conversation(leak=True)] * 2:
            event = ev.TurnStarted(messages=messages, wall_time=12.5)
            fast.write_event(event)
            slow.write_record(records.event_fields(event))
    lines = _event_lines(cached)
    assert lines == _event_lines(generic)
    assert SECRET.encode() not in cached.getvalue()
    assert b"hunter2" not in lines[2]


def test_a_message_is_dumped_once_over_the_turns() -> None:
    """A message carried into later turns is not unstructured again."""
    message_dumps._memo.clear()
    conversation = _conversation()
    for messages in conversation:
        message_dumps.dumped_messages(messages)
    assert len(message_dumps._memo) == len(conversation[-1])


def test_a_memo_entry_serves_only_its_own_message() -> None:
    """An entry found under a message's id but made for another object is not used."""
    message_dumps._memo.clear()
    one = UserMessage(uuid="u", content=(TextBlock(text="a"),))
    other = UserMessage(uuid="v", content=(TextBlock(text="b"),))
    message_dumps._memo[id(other)] = (weakref.ref(one), {"uuid": "u"}, True)
    (dumped,), keys_hit = message_dumps.dumped_messages([other])
    assert dumped["uuid"] == "v"
    assert not keys_hit


def test_the_memo_lets_a_finished_conversation_go() -> None:
    """Entries leave the memo with their messages: a long-lived process does not keep every
    conversation it ever wrote."""
    message_dumps._memo.clear()
    conversation = _conversation()
    for messages in conversation:
        message_dumps.dumped_messages(messages)
    assert message_dumps._memo
    del conversation, messages
    gc.collect()
    assert not message_dumps._memo
