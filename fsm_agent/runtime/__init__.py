"""The runtime: the async driver that performs the core's effects, and what it talks to.

Modules: ``agent`` (``Agent``, ``RunResult`` and the updates ``stream`` yields), ``models``
(``AnthropicModel``, the ``Model`` protocol, failure classification), ``tool`` (the ``Tool``
API and the runners the driver calls), ``hooks``, ``permissions`` and ``compaction``.
"""
