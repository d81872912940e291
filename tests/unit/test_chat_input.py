"""How ``fsm-agent chat`` routes the lines typed at the terminal."""

from __future__ import annotations

import io
from typing import Any

import pytest

from fsm_agent.chat import ChatInput


class Session:
    """Stands for the working session: records what was queued for the turn."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def send(self, text: str) -> None:
        self.sent.append(text)


class TypesOnPrompt(io.StringIO):
    """A terminal whose user types ``line`` the instant the question is shown."""

    def __init__(self, lines: ChatInput, line: str) -> None:
        super().__init__()
        self.lines, self.line = lines, line

    def write(self, text: str) -> int:
        written = super().write(text)
        if "Allow?" in text:
            self.lines._route(self.line)  # the reader thread's hand-off
            self.lines._route(None)  # then the input ends: nothing can hang
        return written


def test_a_line_typed_as_the_question_shows_answers_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A line that arrives the moment the permission prompt is printed answers the question;
    it is not queued as a message for the working turn."""
    lines = ChatInput(queue_while_working=True, stream=io.StringIO(""))
    session = Session()
    lines.working = session  # type: ignore[assignment]
    monkeypatch.setattr("sys.stdout", TypesOnPrompt(lines, "y"))
    assert lines.read_answer("Allow? [y] once: ") == "y"
    assert session.sent == []


def test_a_line_typed_while_no_question_is_open_is_queued_for_the_turn() -> None:
    """Between questions, a line typed during a turn goes to the session's queue."""
    lines = ChatInput(queue_while_working=True, stream=io.StringIO(""))
    session: Any = Session()
    lines.working = session
    lines._route("also this")  # the reader thread's hand-off
    assert session.sent == ["also this"]
