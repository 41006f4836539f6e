"""Changing a person's two-step verification proves them first: the proof's sign-in against a fake
of the pool's client (what moto does not do: lock a person's sign-in after repeated wrong
passwords, throttle), and the service against fakes of the proof and the pool's calls (a refused
proof changes nothing, records nothing; the proof's tokens go nowhere)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from botocore.exceptions import ClientError

from switchboard.core.errors import RateLimited
from switchboard.core.identity import Principal, Scope, user_principal
from switchboard.people.authenticator import AuthenticatorService
from switchboard.people.domain import ProofRefused
from switchboard.people.signin import PoolProof, PoolSignIn, SignInRefused

EMAIL = "ana@acme.example.com"
PASSWORD = "Sb-second-Pass2"
TOKENS = {"AccessToken": "proof-access", "RefreshToken": "proof-refresh", "IdToken": "proof-id", "ExpiresIn": 3600}


def refused(code: str, message: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message}}, "InitiateAuth")


class FakePool:
    """The pool's two sign-in calls: answers or refusals, given in order; every request kept."""

    def __init__(self, *answers: dict[str, Any] | ClientError) -> None:
        self.answers = list(answers)
        self.requests: list[tuple[str, dict[str, Any]]] = []

    def _next(self, operation: str, request: dict[str, Any]) -> dict[str, Any]:
        self.requests.append((operation, request))
        answer = self.answers.pop(0)
        if isinstance(answer, ClientError):
            raise answer
        return answer

    def initiate_auth(self, **request: Any) -> dict[str, Any]:
        return self._next("initiate_auth", request)

    def respond_to_auth_challenge(self, **request: Any) -> dict[str, Any]:
        return self._next("respond_to_auth_challenge", request)


CHALLENGE = {"ChallengeName": "SOFTWARE_TOKEN_MFA", "Session": "s" * 40, "ChallengeParameters": {}}


def test_the_password_alone_proves_a_person_without_an_app_and_the_code_answers_the_pools_challenge() -> None:
    pool = FakePool({"AuthenticationResult": TOKENS})
    assert PoolProof(pool, "console").prove(EMAIL, PASSWORD, None) is False
    assert pool.requests == [
        (
            "initiate_auth",
            {
                "ClientId": "console",
                "AuthFlow": "USER_PASSWORD_AUTH",
                "AuthParameters": {"USERNAME": EMAIL, "PASSWORD": PASSWORD},
            },
        )
    ]

    pool = FakePool(CHALLENGE, {"AuthenticationResult": TOKENS})
    assert PoolProof(pool, "console").prove(EMAIL, PASSWORD, "123456") is True
    operation, request = pool.requests[1]
    assert (operation, request["ChallengeName"], request["Session"]) == (
        "respond_to_auth_challenge",
        "SOFTWARE_TOKEN_MFA",
        "s" * 40,
    )
    assert request["ChallengeResponses"] == {"USERNAME": EMAIL, "SOFTWARE_TOKEN_MFA_CODE": "123456"}


@pytest.mark.parametrize(
    ("answers", "code", "field"),
    [
        ([refused("NotAuthorizedException", "Incorrect username or password.")], "123456", "password"),
        ([refused("UserNotFoundException", "User does not exist.")], "123456", "password"),
        ([CHALLENGE], None, "code"),
        ([CHALLENGE, refused("CodeMismatchException", "Invalid code received for user")], "123456", "code"),
        ([CHALLENGE, refused("NotAuthorizedException", "Invalid session for the user.")], "123456", "code"),
        ([{"ChallengeName": "SMS_MFA", "Session": "s" * 40}], "123456", "password"),
    ],
)
def test_a_wrong_password_or_code_is_refused_at_its_field(
    answers: list[dict[str, Any] | ClientError], code: str | None, field: str
) -> None:
    with pytest.raises(ProofRefused) as caught:
        PoolProof(FakePool(*answers), "console").prove(EMAIL, PASSWORD, code)
    assert caught.value.details["field"] == field


@pytest.mark.parametrize(
    "error",
    [
        refused("NotAuthorizedException", "Password attempts exceeded"),
        refused("TooManyRequestsException", "Too many requests"),
        refused("LimitExceededException", "Attempt limit exceeded, please try after some time."),
    ],
)
def test_the_pools_lockout_after_repeated_failures_is_a_429_in_words_for_the_proof_and_for_sign_in(
    error: ClientError,
) -> None:
    with pytest.raises(RateLimited) as caught:
        PoolProof(FakePool(error), "console").prove(EMAIL, PASSWORD, "123456")
    assert "try again" in str(caught.value) and caught.value.retry_after_seconds == 60
    with pytest.raises(RateLimited):
        PoolSignIn(FakePool(error), "console").sign_in(EMAIL, PASSWORD)
    # A wrong password alone stays a wrong password.
    with pytest.raises(SignInRefused):
        PoolSignIn(FakePool(refused("NotAuthorizedException", "Incorrect username or password.")), "c").sign_in(
            EMAIL, PASSWORD
        )


class FakeProof:
    def __init__(self, on: bool, refusal: ProofRefused | None = None) -> None:
        self.on = on
        self.refusal = refusal
        self.asked: list[tuple[str, str, str | None]] = []

    def prove(self, email: str, password: str, code: str | None) -> bool:
        self.asked.append((email, password, code))
        if self.refusal:
            raise self.refusal
        return self.on


class FakeApps:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def enabled(self, access_token: str) -> bool:
        return True

    def new_secret(self, access_token: str) -> str:
        self.calls.append(("new_secret", access_token))
        return "JBSWY3DPEHPK3PXP"

    def verify(self, access_token: str, code: str) -> None:
        self.calls.append(("verify", code))

    def set_enabled(self, access_token: str, enabled: bool) -> None:
        self.calls.append(("set_enabled", enabled))


class FakeAudit:
    def __init__(self) -> None:
        self.entries: list[tuple[str, str, Any, Any]] = []

    def record(
        self, principal: Principal | None, action: str, target: str, before: Any = None, after: Any = None
    ) -> None:
        self.entries.append((action, target, before, after))


ANA = Principal(
    tenant="acme", key_id=user_principal("sub-ana"), scopes=frozenset({Scope.AGENT}), user="sub-ana", email=EMAIL
)


def test_a_refused_proof_changes_nothing_and_records_nothing() -> None:
    apps, audit = FakeApps(), FakeAudit()
    proof = FakeProof(on=True, refusal=ProofRefused("the password is not your password", field="password"))
    service = AuthenticatorService(apps, proof, audit)
    with pytest.raises(ProofRefused):
        service.turn_off(ANA, "stolen-token", "guess", "000000")
    with pytest.raises(ProofRefused):
        service.start(ANA, "stolen-token", "guess", "000000")
    assert (apps.calls, audit.entries) == ([], [])
    assert proof.asked == [(EMAIL, "guess", "000000")] * 2


def test_a_proven_person_turns_it_off_recorded_by_name_alone_and_an_app_that_was_off_stays_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    apps, audit = FakeApps(), FakeAudit()
    caplog.set_level(logging.DEBUG)
    AuthenticatorService(apps, FakeProof(on=True), audit).turn_off(ANA, "token", PASSWORD, "123456")
    assert apps.calls == [("set_enabled", False)]
    assert audit.entries == [("user.authenticator.disable", user_principal("sub-ana"), None, None)]
    assert PASSWORD not in caplog.text and "123456" not in caplog.text

    apps, audit = FakeApps(), FakeAudit()
    AuthenticatorService(apps, FakeProof(on=False), audit).turn_off(ANA, "token", PASSWORD, "123456")
    assert (apps.calls, audit.entries) == ([], [])


def test_a_new_secret_is_made_only_after_the_proof_and_replacing_an_app_that_is_on_passes_its_code() -> None:
    apps, proof = FakeApps(), FakeProof(on=True)
    made = AuthenticatorService(apps, proof, FakeAudit()).start(ANA, "token", PASSWORD, "654321")
    assert made.secret == "JBSWY3DPEHPK3PXP"
    assert (proof.asked, apps.calls) == ([(EMAIL, PASSWORD, "654321")], [("new_secret", "token")])


def test_the_proofs_tokens_are_neither_answered_nor_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    answer = PoolProof(FakePool(CHALLENGE, {"AuthenticationResult": TOKENS}), "console").prove(
        EMAIL, PASSWORD, "123456"
    )
    assert answer is True  # a bool: no token leaves the proof
    for secret in (*TOKENS.values(), PASSWORD):
        assert str(secret) not in caplog.text
