"""The shapes every capability's API bodies share: strict camelCase bodies, views, and the
identifiers (owner tags, instance names, phone numbers) as string types.

Apart from catalog/schemas.py so that a function whose routes only need these does not build
the catalog's own bodies and views at cold start."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Self

from pydantic import AfterValidator, ConfigDict, StringConstraints, field_validator, model_validator
from pydantic.alias_generators import to_camel

from switchboard.core import model as core_model
from switchboard.core.model import Model, storable_bounds, storable_number_problem

if TYPE_CHECKING:
    from pydantic import GetJsonSchemaHandler
    from pydantic.json_schema import JsonSchemaValue
    from pydantic_core import CoreSchema

OWNER_TAG_PATTERN = r"^[a-z0-9][a-z0-9-]{1,62}$"
INSTANCE_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
PHONE_PATTERN = r"^[1-9][0-9]{7,14}$"  # E.164 digits, no "+"


def _digits(phone: str) -> str:
    return phone.removeprefix("+")


# A phone number in E.164 as people write it, with or without its "+"; stored as its digits.
Phone = Annotated[str, StringConstraints(pattern="^\\+?" + PHONE_PATTERN.removeprefix("^")), AfterValidator(_digits)]
OwnerTag = Annotated[str, StringConstraints(pattern=OWNER_TAG_PATTERN)]
InstanceName = Annotated[str, StringConstraints(pattern=INSTANCE_NAME_PATTERN)]
Name = Annotated[core_model.Name, StringConstraints(strip_whitespace=True, min_length=1, max_length=120)]
Secret = Annotated[core_model.Name, StringConstraints(min_length=8, max_length=4096)]
HttpUrl = Annotated[str, StringConstraints(pattern=r"^https?://[^\s]+$", max_length=2048)]


def _in_utc(moment: datetime) -> datetime:
    """A time a client names, in UTC: without an offset it is UTC already; one whose UTC falls
    outside the years 1 to 9999 is the client's mistake (a ValueError: 422), never a comparison or
    conversion that fails later (a naive time beside an aware one, or `astimezone` overflowing)."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except OverflowError as exc:
        raise ValueError("the time is out of range in UTC") from exc


# A time a body or query names (a listing's `since` and `until`), as an aware UTC datetime.
Instant = Annotated[datetime, AfterValidator(_in_utc)]


class Body(Model):
    """Strict camelCase input: unknown fields are refused, types are not coerced.

    Every number of every body, in any field (nested lists and maps included), is one a DynamoDB
    item holds exactly (`core.model.storable_number_problem`): a whole number within 64 bits, any
    other number 0 or between 1E-130 and 1E126 in magnitude. A field needs no bounds of its own for
    that, and the OpenAPI document states the same ranges (`storable_bounds`)."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", strict=True, defer_build=True
    )

    @field_validator("*", mode="after")
    @classmethod
    def _storable_numbers(cls, value: Any) -> Any:
        problem = storable_number_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        schema = handler(core_schema)
        storable_bounds(handler.resolve_ref_schema(schema))
        return schema


class PatchBody(Body):
    """A partial update: an absent field is left alone; `null` clears it, where clearing makes sense.

    A field named in `not_nullable` may be left out but never be null; the document says so (it is
    not nullable there and has no default)."""

    not_nullable: ClassVar[tuple[str, ...]] = ()

    @model_validator(mode="after")
    def _refuse_null_for_required_fields(self) -> Self:
        for name in self.not_nullable:
            if name in self.model_fields_set and getattr(self, name) is None:
                raise ValueError(f"{to_camel(name)} cannot be null")
        return self

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        schema = super().__get_pydantic_json_schema__(core_schema, handler)
        properties = handler.resolve_ref_schema(schema).get("properties", {})
        for name in cls.not_nullable:
            field = properties.get(to_camel(name))
            if field is None:
                continue
            field.pop("default", None)
            branches = [branch for branch in field.get("anyOf", ()) if branch.get("type") != "null"]
            if len(branches) == 1 and "anyOf" in field:
                del field["anyOf"]
                field.update(branches[0])
        return schema


class View(Model):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, defer_build=True)
