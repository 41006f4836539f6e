"""Who may write an instance's connection state, and when. Pure rules, no I/O.

The state (`CONNECTED` / `DISCONNECTED` on the instance item) is learnt two ways:

- an **ordered event**: a connection webhook with the provider's `seq` (the calls-capable
  server's signed envelope). It is written only if its `seq` is newer than the one stored, so a
  late or repeated event never undoes a newer one;
- a **status read**: the provider answers what the session is now (`/instance/status`, wuzapi's
  `/session/status`, Evolution's `/instance/connectionState/{instance}`). Every write of the
  state, by an event or a read, moves the item's revision (`state_rev`) on. A read notes the
  revision before it asks the provider and writes only if the revision is still that one: if
  anything was written while the provider answered, the read may have started before it (its
  answer may predate it), so it is dropped. A read that finds the state it started from writes
  nothing.

Events without an order (a plain wuzapi's `Connected`/`LoggedOut`, which carry no time and no id
and are signed over their bytes alone; Evolution's `connection.update`) are never written as they
say: they ask for a status read, and their reason (a logout) counts only if the read agrees. A
captured `LoggedOut` replayed once the number is back reads `connected` and changes nothing.

A number of a cloud kind (the Meta Cloud API) has no session: it is connected by nature, whatever
its read answers; what the provider says of the number itself goes to the ban watch.
"""

from __future__ import annotations

from pydantic import ConfigDict

from switchboard.catalog.domain import InstanceState
from switchboard.core.model import Model


def state_of(connected: bool) -> InstanceState:
    return "CONNECTED" if connected else "DISCONNECTED"


class StateWrite(Model):
    """What applying a state did: whether it was written, and the state it replaced (a newer event
    may repeat the state: written, but nothing changed)."""

    model_config = ConfigDict(frozen=True)

    written: bool
    previous: InstanceState | None = None

    def changed(self, state: InstanceState) -> bool:
        return self.written and self.previous != state


class StoredState(Model):
    """The stored state and its revision, read before a status read asks the provider."""

    model_config = ConfigDict(frozen=True)

    state: InstanceState = "DISCONNECTED"
    rev: int = 0


class Check(Model):
    """What a status read found and did. `status_read`: the provider answered (a cloud kind's
    failed read still leaves it connected); `agrees`: the read says what the event being confirmed
    said (None when no event asked)."""

    model_config = ConfigDict(frozen=True)

    state: InstanceState
    changed: bool = False
    status_read: bool = True
    agrees: bool | None = None
