"""The sample events of events/ (also what `sam local invoke` is given)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

EVENTS = Path(__file__).resolve().parents[2] / "events"


def sample_event(name: str) -> Any:
    """events/<name>, parsed: a fresh copy each time, for the test to adapt."""
    return json.loads((EVENTS / name).read_text())
