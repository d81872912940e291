"""``python -m fsm_agent`` is the ``fsm-agent`` command."""

import sys

from fsm_agent.cli import main

sys.exit(main())
