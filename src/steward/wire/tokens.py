"""Access tokens: the record kept (hashed) in ZooKeeper, and the REST API's token bodies.

A token is ``stw_<id>_<secret>``; only the SHA-256 of its secret is stored, in
``auth/tokens/<id>`` (:class:`TokenRecord`). No answer ever carries a secret or a hash except
:class:`CreatedToken`, the one answer to ``POST /v1/tokens``, which carries the token once.
"""

from __future__ import annotations

import enum
import re
from typing import ClassVar

from pydantic import Field, field_validator

from steward.wire.patterns import TEAM_PATTERN
from steward.wire.values import Payload, Value

TOKEN_ID_PATTERN = r"[0-9a-f]{12}"
_TOKEN_ID = re.compile(TOKEN_ID_PATTERN)
TOKEN_NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_.@\-]{0,63}"
_TEAM = re.compile(TEAM_PATTERN)
MAX_TEAMS = 64
"""Teams one token may be in."""


class Role(enum.StrEnum):
    """What a caller may do. Each role may do everything the ones before it may."""

    VIEWER = "viewer"
    """Read: jobs, results, the cluster, the OpenAPI document."""
    SUBMITTER = "submitter"
    """A viewer that may also submit jobs, upload their files and cancel its own jobs."""
    ADMIN = "admin"
    """Everything: any job, tokens, the cluster."""


def check_teams(teams: list[str]) -> list[str]:
    """``teams`` sorted without repeats, if each could name a team; else ValueError."""
    for team in teams:
        if not _TEAM.fullmatch(team):
            raise ValueError(
                f"invalid team {team[:70]!r}: 1 to 64 letters, digits, '.', '_' or '-'"
            )
    return sorted(set(teams))


def check_token_id(token_id: str) -> str:
    """``token_id`` if it could name a token (12 lowercase hex digits), else ValueError."""
    if not _TOKEN_ID.fullmatch(token_id):
        raise ValueError(f"invalid token id {token_id[:40]!r}: expected 12 hex digits")
    return token_id


class TokenRecord(Payload):
    """``auth/tokens/<id>``: a token's name, role and the SHA-256 of its secret."""

    kind_name: ClassVar[str] = "token"
    id: str = Field(pattern=f"^{TOKEN_ID_PATTERN}$")
    name: str = Field(pattern=f"^{TOKEN_NAME_PATTERN}$")
    role: Role
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    created_at: float
    expires_at: float | None = None
    teams: list[str] = Field(default_factory=list, max_length=MAX_TEAMS)
    """The teams whose jobs the token's caller sees and submits as (none in records written
    before teams: the default team)."""


class TokenView(Value):
    """A token as ``GET /v1/tokens`` shows it: never its secret, never its hash."""

    id: str
    name: str
    role: Role
    created_at: float
    expires_at: float | None = None
    teams: list[str] = Field(default_factory=list, description="its teams (none: the default)")

    @classmethod
    def of(cls, record: TokenRecord) -> TokenView:
        return cls(
            id=record.id,
            name=record.name,
            role=record.role,
            created_at=record.created_at,
            expires_at=record.expires_at,
            teams=record.teams,
        )


class TokenList(Value):
    tokens: list[TokenView]


class CreateTokenRequest(Value):
    """``POST /v1/tokens``: who the token is for, its role, and optionally its lifetime."""

    name: str = Field(pattern=f"^{TOKEN_NAME_PATTERN}$")
    role: Role
    expires_in: float | None = Field(
        default=None, gt=0, le=10 * 365 * 86400, description="seconds; none: never expires"
    )
    teams: list[str] = Field(
        default_factory=list,
        max_length=MAX_TEAMS,
        description="the teams whose jobs its caller sees and submits as; none: the default team",
    )

    @field_validator("teams")
    @classmethod
    def _valid_teams(cls, value: list[str]) -> list[str]:
        return check_teams(value)

    @field_validator("name")
    @classmethod
    def _not_internal(cls, value: str) -> str:
        if value == "internal":
            raise ValueError("'internal' is the cluster's own credential's name")
        return value


class CreatedToken(Value):
    """The answer to ``POST /v1/tokens``: the token, shown this once, and its record's view."""

    token: str
    info: TokenView
