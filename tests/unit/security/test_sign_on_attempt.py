"""One browser's sign-in in progress (steward.security.sign_on.LoginAttempt): fresh random
values each time, the RFC 7636 S256 challenge, and a cookie that round-trips and refuses junk."""

from __future__ import annotations

import base64
import hashlib

from steward.security.sign_on import LoginAttempt


def test_each_attempt_is_fresh_and_its_challenge_is_s256_of_the_verifier() -> None:
    first, second = LoginAttempt.new(), LoginAttempt.new()
    assert len({first.state, first.nonce, first.verifier, second.state}) == 4
    # RFC 7636 appendix B's example verifier and challenge
    rfc = LoginAttempt("s" * 43, "n" * 43, "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")
    assert rfc.challenge == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
    digest = hashlib.sha256(first.verifier.encode()).digest()
    assert first.challenge == base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def test_the_cookie_round_trips_and_junk_is_no_attempt() -> None:
    attempt = LoginAttempt.new()
    assert LoginAttempt.from_cookie(attempt.cookie_value()) == attempt
    for junk in (None, "", "a.b", "a.b.c", ".".join(["x" * 43] * 4), ".".join(["x" * 200] * 3)):
        assert LoginAttempt.from_cookie(junk) is None
