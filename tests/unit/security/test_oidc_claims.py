"""A verified sign-on token's claims into an Identity (steward.security.oidc_claims): the user
claim names the caller, the highest role any group maps to is its role, every team any group
maps to is one of its teams, and a caller no group admits is refused with a clear message."""

from __future__ import annotations

import pytest

from steward.errors import UnmappedIdentityError
from steward.security.identity import Identity
from steward.security.oidc_claims import ClaimMapping
from steward.wire.tokens import Role

MAPPING = ClaimMapping(
    user_claim="preferred_username",
    groups_claim="groups",
    group_roles=(("analysts", "viewer"), ("data-eng", "submitter"), ("ops", "admin")),
    group_teams=(("data-eng", "etl"), ("data-eng", "ml"), ("analysts", "bi")),
)


def test_the_highest_role_of_any_group_and_every_mapped_team() -> None:
    claims = {"preferred_username": "alice", "groups": ["analysts", "data-eng", "other"]}
    assert MAPPING.identity(claims) == Identity(
        name="alice", role=Role.SUBMITTER, teams=frozenset({"etl", "ml", "bi"})
    )
    ops = {"preferred_username": "olga", "groups": ["ops", "analysts"]}
    assert MAPPING.identity(ops) == Identity(name="olga", role=Role.ADMIN, teams=frozenset({"bi"}))


def test_a_single_group_may_come_as_a_bare_string() -> None:
    identity = MAPPING.identity({"preferred_username": "vera", "groups": "analysts"})
    assert identity is not None and identity.role is Role.VIEWER


def test_no_mapped_group_is_refused_naming_the_groups_seen() -> None:
    with pytest.raises(UnmappedIdentityError, match="bob signed in, but none of its groups"):
        MAPPING.identity({"preferred_username": "bob", "groups": ["outsiders"]})
    with pytest.raises(UnmappedIdentityError, match="'groups': none"):
        MAPPING.identity({"preferred_username": "bob"})
    with pytest.raises(UnmappedIdentityError):
        MAPPING.identity({"preferred_username": "bob", "groups": {"ops": True}})  # not a list


def test_a_missing_or_unusable_user_claim_names_nobody() -> None:
    for name in (None, "", 42, "x" * 129, "tab\there"):
        claims = {"groups": ["ops"]} | ({} if name is None else {"preferred_username": name})
        assert MAPPING.identity(claims) is None
