"""An MCP answer the client cannot read becomes the error of the request it names."""

from __future__ import annotations

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install '.[mcp]')")

import mcp_types
from pydantic import ValidationError

from fsm_agent.runtime.mcp_answers import UNREADABLE, error_for_unreadable


def _unreadable(line: str) -> ValidationError:
    """What the ``mcp`` client makes of ``line``."""
    with pytest.raises(ValidationError) as caught:
        mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    return caught.value


@pytest.mark.parametrize(
    ("line", "request_id"),
    [
        ('{"jsonrpc": "2.0", "id": 3, "result": 5}', 3),
        ('{"jsonrpc": "1.0", "id": "a\\"b", "result": {}}', 'a"b'),
        ('{"jsonrpc": "2.0", "id": 7, "result": {"content": [{"id": 9', 7),
        ('{"result": {"id": 9, "text": "}"}, "id": 12, "jsonrpc": "2.0"', 12),
        ('{"jsonrpc":"2.0","id":-4,"error":{"code":"x"}}', -4),
    ],
)
def test_an_unreadable_answer_naming_its_request_is_that_requests_error(
    line: str, request_id: object
) -> None:
    message = error_for_unreadable(_unreadable(line)).message
    assert isinstance(message, mcp_types.JSONRPCError)
    assert message.id == request_id
    assert message.error.message == UNREADABLE
    assert message.error.code == mcp_types.PARSE_ERROR


@pytest.mark.parametrize(
    "line",
    [
        "a log line printed on stdout",
        '{"result": {"id": 9, "text": [',  # an id inside the result only
        '{"jsonrpc": "2.0", "id": 1.5, "result": 5}',
        '{"jsonrpc": "2.0", "id": 2, "method": "sampling/createMessage", "params": 5}',
        '{"jsonrpc": "2.0", "id": 2, "method": "ping", "params": [',
        "[1, 2]",
    ],
)
def test_a_line_that_names_no_request_of_ours_is_left_as_it_was(line: str) -> None:
    """A log line, an id that is not the answer's own, a request of the server's own (its ids
    are not ours): passed on, to be dropped as before."""
    assert error_for_unreadable(_unreadable(line)) is None


def test_an_error_that_is_not_a_validation_error_is_left() -> None:
    assert error_for_unreadable(OSError("broken pipe")) is None
