"""The pure core: machine tables, loop and tool-call state, events, effects, messages.

Nothing here does I/O, reads a clock or draws a random number (a test enforces it). Modules:
``tables`` (the two machine tables), ``agent_core`` (``AgentCore.feed(event) -> Step``),
``tool_calls`` (the per-call machine and its scheduler), ``events`` and ``effects`` (what goes
in and out), ``messages`` and ``codec`` (the transcript and its one converter), ``stream``
(assembling a response from stream events), ``normalize`` (messages for the API), ``config``,
``loop_state``, ``texts`` (every text the loop writes) and ``diagram``.
"""
