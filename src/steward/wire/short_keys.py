"""Validators that read a record's short-key form straight into the record's own class.

Record format 2 (:mod:`steward.wire.record_format`) writes a model's fields under short keys.
Reading them back used to rename the keys in Python, dump the result back to JSON and validate
that (issue 22: 31 to 46 µs a status record, of which the validation was 13). A validator made
here does it in one pass of pydantic's core: it is the model's own core schema, copied, with
each field's short key as its validation alias (and, where the short form reads a field it
leaves out as another value than the model's default, that value as the default), so a
validation yields an instance of the model itself, strict as ever, nested models included.

A missing or wrong-typed field is reported by its field's name, not its short key
(``loc_by_alias`` off), as a schema-1 record's is. The copy is made from the schema pydantic
built for the model, so a field added to the model is read by both forms at once; a field
without a short key keeps its name as its key. pydantic's core swaps any schema of a built
model for that model's own validator (its long keys), so the copy validates the model's
fields and makes the instance from them as the core does (:func:`_constructor`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel
from pydantic_core import CoreSchema, SchemaValidator, core_schema


class ShortForm:
    """How one model is written in the short form: its fields' short keys, the defaults that
    differ from the model's, and the fields read by a schema of their own (``computed``: the
    job id its path names, :func:`from_context`; the schema, :func:`constant_after`)."""

    def __init__(
        self,
        keys: Mapping[str, str],
        *,
        defaults: Mapping[str, object] | None = None,
        computed: Mapping[str, CoreSchema] | None = None,
    ) -> None:
        self.keys = keys
        self.defaults = defaults or {}
        self.computed = computed or {}


def short_validator(
    model: type[BaseModel], forms: Mapping[type[BaseModel], ShortForm]
) -> SchemaValidator:
    """A validator of ``model``'s short form (every model of ``forms``, wherever it is
    nested, read by its short keys); its ``validate_json`` yields a ``model``."""
    return SchemaValidator(_rewritten(model.__pydantic_core_schema__, forms), _CONFIG)


def from_context(key: str) -> CoreSchema:
    """A field's schema that takes its value from the validation context's ``key``, whatever
    the record holds under its name (the record never says it: the path does)."""

    def read(_: object, info: core_schema.ValidationInfo) -> object:
        return context_of(info)[key]

    return core_schema.with_default_schema(
        core_schema.with_info_plain_validator_function(read), default=None, validate_default=True
    )


def context_of(info: core_schema.ValidationInfo) -> Mapping[str, Any]:
    """The validation's context (a short form's reader needs one: the record's path)."""
    context = info.context
    if not isinstance(context, Mapping):
        raise TypeError("a short form is validated with a context (its record's path)")
    return context


def constant_after(check: CoreSchema, value: object) -> CoreSchema:
    """A field's schema that checks what the record holds with ``check`` and then reads
    ``value`` (the short form's ``"schema": 2`` is schema 1's record in memory)."""
    replaced: Callable[[object], object] = lambda _: value  # noqa: E731
    return core_schema.no_info_after_validator_function(replaced, check)


def _rewritten(node: Any, forms: Mapping[type[BaseModel], ShortForm]) -> Any:
    """A copy of the core schema ``node`` with each model of ``forms`` in its short form."""
    if isinstance(node, list):
        return [_rewritten(item, forms) for item in node]
    if not isinstance(node, dict):
        return node
    copied = {key: _rewritten(value, forms) for key, value in node.items()}
    if copied.get("type") == "model" and copied.get("cls") in forms:
        return _shortened(copied, forms[copied["cls"]])
    return copied


def _shortened(model_schema: dict[str, Any], form: ShortForm) -> CoreSchema:
    """The schema of ``model_schema``'s fields read by their short keys, made an instance of
    its model by :func:`_constructor`: pydantic's core would use the model's own (long-key)
    validator for any schema of that model."""
    model: type[BaseModel] = model_schema["cls"]
    fields: dict[str, Any] = model_schema["schema"]["fields"]
    unknown = (set(form.keys) | set(form.defaults) | set(form.computed)) - set(fields)
    if unknown:
        raise ValueError(f"{model.__name__} has no field {sorted(unknown)}")
    for name, field in fields.items():
        if name in form.computed:
            field["schema"] = form.computed[name]
        if name in form.keys:
            field["validation_alias"] = form.keys[name]
        if name in form.defaults:
            current = field["schema"]
            inner = current["schema"] if current.get("type") == "default" else current
            field["schema"] = core_schema.with_default_schema(inner, default=form.defaults[name])
    fields_schema = {**model_schema["schema"], "model_name": model.__name__}
    made = core_schema.no_info_after_validator_function(_constructor(model), fields_schema)
    if "ref" in model_schema:  # a definition-ref elsewhere may name it
        made["ref"] = model_schema["ref"]
    return made


_CONFIG: Any = {"validate_by_name": False, "validate_by_alias": True, "loc_by_alias": False}
"""Every short form's: its keys only; an error names the field, not the key."""


def _constructor(model: type[BaseModel]) -> Callable[[Any], BaseModel]:
    """What pydantic's core does with a model's validated fields: an instance of ``model``
    holding them, made without validating them again (they are, by the fields' schema). Only
    for a model without private attributes or a post-init hook: nothing else is set up."""
    if model.__private_attributes__ or model.__pydantic_post_init__ is not None:
        raise TypeError(f"{model.__name__}: a short form is only for a plain model")
    new = object.__new__
    put = object.__setattr__

    def construct(validated: tuple[dict[str, Any], object, set[str]]) -> BaseModel:
        values, _, fields_set = validated
        instance = new(model)
        put(instance, "__dict__", values)
        put(instance, "__pydantic_fields_set__", fields_set)
        put(instance, "__pydantic_extra__", None)
        put(instance, "__pydantic_private__", None)
        return instance

    return construct
