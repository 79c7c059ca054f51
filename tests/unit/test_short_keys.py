"""A short-key validator (wire/short_keys.py) reads a model's short form into the model itself,
in one strict validation: nested models too, by their field names in errors, never by the long
keys; a field it cannot read is refused when the validator is made."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict, PrivateAttr, ValidationError
from pydantic_core import core_schema

from steward.wire.short_keys import ShortForm, constant_after, from_context, short_validator


class Inner(BaseModel):
    model_config = ConfigDict(frozen=True)
    number: int
    label: str = ""


class Outer(BaseModel):
    model_config = ConfigDict(frozen=True)
    owner: str
    version: int = 1
    inners: list[Inner] = []
    team: str | None = None


FORMS = {
    Outer: ShortForm(
        {"inners": "i", "team": "t", "version": "v"},
        defaults={"team": "default"},
        computed={
            "owner": from_context("owner"),
            "version": constant_after(core_schema.literal_schema([2]), 1),
        },
    ),
    Inner: ShortForm({"number": "n", "label": "l"}),
}

VALIDATOR = short_validator(Outer, FORMS)


def read(data: bytes, owner: str = "me") -> Outer:
    found = VALIDATOR.validate_json(data, strict=True, context={"owner": owner})
    assert isinstance(found, Outer)
    return found


def test_the_short_form_reads_into_the_model_itself_nested_models_too() -> None:
    found = read(b'{"v":2,"i":[{"n":1,"l":"a"},{"n":2}]}')

    assert type(found) is Outer
    assert type(found.inners[0]) is Inner
    # team: the short form's default, not the model's
    inners = [Inner(number=1, label="a"), Inner(number=2)]
    assert found == Outer(owner="me", inners=inners, team="default")
    assert found.version == 1  # checked as 2, read as the constant
    assert found.model_fields_set == {"version", "inners"}
    with pytest.raises(ValidationError):
        found.owner = "other"  # type: ignore[misc] (frozen, as any instance)


def test_a_value_from_the_context_wins_over_the_records_own() -> None:
    assert read(b'{"v":2,"owner":"someone"}', owner="path").owner == "path"


@pytest.mark.parametrize(
    ("data", "where"),
    [
        (b'{"v":2,"inners":[]}', None),  # a long key is an unknown key: ignored, not read
        (b'{"v":2,"i":[{"number":1}]}', ("inners", 0, "number")),
        (b'{"v":2,"i":[{"n":"1"}]}', ("inners", 0, "number")),  # strict: "1" is no int
        (b'{"v":3}', ("version",)),
    ],
)
def test_only_the_short_keys_are_read_and_errors_name_the_field(
    data: bytes, where: tuple[object, ...] | None
) -> None:
    if where is None:
        assert read(data).inners == []
        return
    with pytest.raises(ValidationError) as caught:
        read(data)
    assert caught.value.errors()[0]["loc"] == where


def test_a_short_key_for_a_field_the_model_lacks_is_refused_when_made() -> None:
    with pytest.raises(ValueError, match=r"Inner has no field \['count'\]"):
        short_validator(Outer, {Outer: FORMS[Outer], Inner: ShortForm({"count": "c"})})


def test_a_model_with_private_state_is_refused_when_made() -> None:
    class Private(BaseModel):
        value: int
        _cache: int = PrivateAttr(default=0)

    with pytest.raises(TypeError, match="only for a plain model"):
        short_validator(Private, {Private: ShortForm({"value": "v"})})
