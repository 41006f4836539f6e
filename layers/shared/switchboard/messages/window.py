"""The customer-service window of one (number, contact): whether the number may send free-form.

On a number of a kind with the window rule (the Cloud API: `ProviderKindSpec.service_window`), a
business may send free-form content (text, media, interactive, ...) to a contact only within 24 h
of the contact's last message to that number; outside it, only an approved template. The window
is read from the heard marks every incoming message writes on the contact's affinity item
(`messages/heard.py`: `heard_<number id>`), which the send worker reads with the affinity: no
request of its own.

`WindowGate` is what the send worker asks route by route: a free-form message meets a closed
window on a Cloud API number before Meta refuses it (131047), and the pool moves on.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import ConfigDict

from switchboard.core.model import Model
from switchboard.messages.domain import is_free_form
from switchboard.pool.domain import HEARD_WINDOW, Affinity
from switchboard.providers.content import Content
from switchboard.providers.kinds import spec_for

OUTSIDE_SERVICE_WINDOW = "outside_service_window"
SERVICE_WINDOW = HEARD_WINDOW  # 24 h after the contact's last message to the number


class ServiceWindow(Model):
    """A number's window with one contact: when the contact last wrote to it, and until when it
    may answer freely (None: the contact never wrote to it, or not since the heard marks exist)."""

    model_config = ConfigDict(frozen=True)

    number_id: str
    last_heard_at: datetime | None = None

    @property
    def open_until(self) -> datetime | None:
        return None if self.last_heard_at is None else self.last_heard_at + SERVICE_WINDOW

    def is_open(self, now: datetime) -> bool:
        return self.open_until is not None and now < self.open_until

    def trace_data(self) -> dict[str, object]:
        """What a trace entry says of the window."""
        return {
            "lastHeardAt": self.last_heard_at.isoformat() if self.last_heard_at else None,
            "windowOpenUntil": self.open_until.isoformat() if self.open_until else None,
        }


def window_of(affinity: Affinity | None, number_id: str) -> ServiceWindow:
    heard = affinity.heard.get(number_id) if affinity is not None else None
    return ServiceWindow(number_id=number_id, last_heard_at=heard)


def has_window(kind: str) -> bool:
    """Whether a route of `kind` sends free-form content only within the window."""
    return spec_for(kind).service_window


class WindowGate:
    """The windows of one recipient as the send worker met them, at `now`."""

    def __init__(self, affinity: Affinity | None, now: datetime) -> None:
        self._affinity = affinity
        self._now = now

    def closed(self, number_id: str, kind: str, content: Content | None) -> ServiceWindow | None:
        """The window when it keeps `content` from leaving through a route of `kind` of the
        number (free-form content, a kind with the window rule, the window closed), else None."""
        if not is_free_form(content) or not has_window(kind):
            return None
        window = window_of(self._affinity, number_id)
        return None if window.is_open(self._now) else window

    def open_window(self, number_id: str, kind: str, content: Content | None) -> ServiceWindow | None:
        """The window a free-form `content` leaves within through a route of `kind`, to trace."""
        if not is_free_form(content) or not has_window(kind):
            return None
        window = window_of(self._affinity, number_id)
        return window if window.is_open(self._now) else None
