"""pytest plugin: replay recorded traces as test items (``--fsm-replay PATH``)."""

from __future__ import annotations
