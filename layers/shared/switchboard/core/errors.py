"""Domain errors. The HTTP mapping lives in `switchboard.core.api.errors`; nobody matches on text.

Each error carries a stable machine `code` (the `error` field clients see) and a message that
must never contain a secret.
"""

from __future__ import annotations

from typing import Any


class SwitchboardError(Exception):
    """Base of every error the domain raises on purpose."""

    code = "error"

    def __init__(self, message: str = "", *, code: str | None = None, **details: Any) -> None:
        super().__init__(message or code or self.code)
        if code:
            self.code = code
        self.message = message or self.code
        self.details = details


# --- client mistakes -------------------------------------------------------------------------


class InvalidInput(SwitchboardError):
    code = "invalid_input"


class Unauthenticated(SwitchboardError):
    code = "unauthorized"


class Forbidden(SwitchboardError):
    code = "forbidden"


class NotFound(SwitchboardError):
    """Also raised for another tenant's object: its existence is never revealed."""

    code = "not_found"


class Conflict(SwitchboardError):
    code = "conflict"


class AlreadyExists(Conflict):
    code = "already_exists"


class IdempotencyKeyInFlight(Conflict):
    code = "idempotency_key_in_flight"


class IdempotencyKeyReused(SwitchboardError):
    """Same Idempotency-Key, different body."""

    code = "idempotency_key_reused"


class LineBusy(Conflict):
    code = "line_busy"


class LastAdminKey(Conflict):
    """Revoking (or demoting) the tenant's only admin key would leave nobody to administer it."""

    code = "last_admin_key"


class PayloadTooLarge(SwitchboardError):
    code = "payload_too_large"


class UnsupportedMediaType(SwitchboardError):
    """A body whose Content-Type is none the route reads, or a body without one."""

    code = "unsupported_media_type"


class UnknownReference(SwitchboardError):
    """A body names an object of the caller's tenant that does not exist there (another
    tenant's included, without saying so): the request itself is fine, what it points at is not."""

    code = "unknown_reference"


class InvalidTemplate(SwitchboardError):
    """A template the send cannot use: unknown or not approved in the WhatsApp Business Account of
    the key's Cloud API numbers, or parameters that do not fit its definition (the message says
    what is wrong)."""

    code = "template_parameters"


class UnsupportedByProvider(SwitchboardError):
    """The provider server does not announce the capability the request needs."""

    code = "unsupported_by_provider"


class InstanceDisconnected(Conflict):
    code = "instance_disconnected"


# --- provider failures -----------------------------------------------------------------------


# The longest a provider's own error message is kept (on the message and in its trace): enough for
# Meta's title and details, bounded so a provider echoing a whole request cannot grow the item.
MAX_PROVIDER_MESSAGE_CHARS = 300


def provider_text(value: object) -> str | None:
    """A provider's own error text as it is kept: a string, control characters removed, bounded."""
    if not isinstance(value, str):
        return None
    text = "".join(char if char.isprintable() else " " for char in value).strip()
    return text[:MAX_PROVIDER_MESSAGE_CHARS] or None


class ProviderError(SwitchboardError):
    """A provider call failed. Subclasses say whether a retry may help.

    `details["provider_code"]` and `details["provider_message"]`, when the answer had them, are
    the provider's own words (Meta's `error.code` and `error.message`, Evolution's
    `response.message`, wuzapi's `error`): kept on the message for the operator, never put in
    our own error messages."""

    code = "provider_error"
    retryable = False

    @property
    def provider_code(self) -> str | None:
        value = self.details.get("provider_code")
        return None if value is None else str(value)

    @property
    def provider_message(self) -> str | None:
        return provider_text(self.details.get("provider_message"))


class ProviderTimeout(ProviderError):
    """No answer in time: the outcome is unknown (the request may have been applied)."""

    code = "provider_timeout"
    retryable = True


class DeadlinePassed(ProviderTimeout):
    """A provider call stopped at its caller's deadline (`core.clock.Deadline`) before it was
    done: what it would have answered is unknown, and the caller has no time left to wait for it."""

    code = "deadline_passed"


class ProviderUnavailable(ProviderError):
    """5xx or connection refused: the request was not applied, a retry may help."""

    code = "provider_unavailable"
    retryable = True


class ProviderRejected(ProviderError):
    """4xx: the provider refused this request; the same request will fail again."""

    code = "provider_rejected"


class ProviderDisconnected(ProviderError):
    """The instance has no live WhatsApp session: try another instance or wait."""

    code = "provider_disconnected"


class ProviderThrottled(ProviderUnavailable):
    """WhatsApp refused the send because of the number's standing, not the message: the
    reach-out timelock (whatsmeow's server error 463) or Meta's throughput and pair rate limits
    (130429, 131056). Not applied; another number may send it now, this one only later.
    `details["provider_code"]` carries the provider's code."""

    code = "provider_throttled"


class ProviderLineBusy(ProviderError):
    """The provider refused a dial with 409 line_busy: it is the final admission authority."""

    code = "line_busy"


# --- provider webhooks and routing --------------------------------------------------


class EventNotApplied(SwitchboardError):
    """An accepted event's effects did not all run: 5xx so the provider redelivers it."""

    code = "event_not_applied"


class DownstreamError(SwitchboardError):
    """The tenant's downstream (Chatwoot-style API) failed; the forward queue retries, then parks it."""

    code = "downstream_error"


# --- call limit -------------------------------------------------------------------------


class NotCallsInstance(UnsupportedByProvider):
    """A calls feature asked of a messages instance: refused (422) like any unsupported feature."""

    code = "not_calls_instance"


# --- number pool and sending -------------------------------------------------------


class PoolChanged(Conflict):
    """The pool changed between read and write (another admin edited it): read it again."""

    code = "pool_changed"


class AlreadyFinal(Conflict):
    """The message already left QUEUED (a redelivered or concurrent job): nothing left to do."""

    code = "already_final"


class RetryLater(SwitchboardError):
    """A transient send failure: the job goes back to its queue and is retried after a delay."""

    code = "retry_later"


class QueueUnavailable(SwitchboardError):
    """The message is stored but could not be queued: 5xx, retry with the same Idempotency-Key."""

    code = "queue_unavailable"


class DeliveryInProgress(Conflict):
    """A client webhook delivery is still being retried (or a replay of it is queued): replaying it
    now would send the event twice."""

    code = "delivery_in_progress"


# --- call slots and control --------------------------------------------------------


class CallOwned(Conflict):
    """Another attendant owns the call: only an explicit transfer by the owner or an admin moves it."""

    code = "call_owned"


class CallEnded(Conflict):
    """The call has ended: there is nothing left to control."""

    code = "call_ended"


# --- quotas --------------------------------------------------------------------------


class RateLimited(SwitchboardError):
    """Over a request-rate quota: 429 with `Retry-After` (whole seconds) saying when to try again."""

    code = "rate_limited"

    def __init__(self, message: str, *, retry_after_seconds: int, code: str | None = None) -> None:
        super().__init__(message, code=code)
        self.retry_after_seconds = max(1, retry_after_seconds)


class DailyQuotaExceeded(RateLimited):
    """The tenant's messages for this UTC day are spent: `Retry-After` points at the next UTC day."""

    code = "daily_quota_exceeded"
