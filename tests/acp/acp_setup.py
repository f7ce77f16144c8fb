"""The fake agent's command line and the notes file its tests give it."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

FAKE_AGENT = Path(__file__).with_name("fake_agent.py")
#: The fake agent's command line, as ``--model acp:<command line>`` takes it.
AGENT = shlex.join([sys.executable, str(FAKE_AGENT)])
NOTES = "a draft note\nline two\n"
