"""The shapes every capability's API bodies share: strict camelCase bodies, views, and the
catalog's identifiers as string types.

Apart from catalog/schemas.py so that a function whose routes only need these does not build
the catalog's own bodies and views at cold start."""

from __future__ import annotations

from typing import Annotated, ClassVar, Self

from pydantic import AfterValidator, ConfigDict, StringConstraints, model_validator
from pydantic.alias_generators import to_camel

from switchboard.catalog.domain import INSTANCE_NAME_PATTERN, OWNER_TAG_PATTERN, PHONE_PATTERN
from switchboard.core import model as core_model
from switchboard.core.model import Model


def _digits(phone: str) -> str:
    return phone.removeprefix("+")


# A phone number in E.164 as people write it, with or without its "+"; stored as its digits.
Phone = Annotated[str, StringConstraints(pattern="^\\+?" + PHONE_PATTERN.removeprefix("^")), AfterValidator(_digits)]
OwnerTag = Annotated[str, StringConstraints(pattern=OWNER_TAG_PATTERN)]
InstanceName = Annotated[str, StringConstraints(pattern=INSTANCE_NAME_PATTERN)]
Name = Annotated[core_model.Name, StringConstraints(strip_whitespace=True, min_length=1, max_length=120)]
Secret = Annotated[core_model.Name, StringConstraints(min_length=8, max_length=4096)]
HttpUrl = Annotated[str, StringConstraints(pattern=r"^https?://[^\s]+$", max_length=2048)]


class Body(Model):
    """Strict camelCase input: unknown fields are refused, types are not coerced."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", strict=True, defer_build=True
    )


class PatchBody(Body):
    """A partial update: an absent field is left alone; `null` clears it, where clearing makes sense."""

    not_nullable: ClassVar[tuple[str, ...]] = ()

    @model_validator(mode="after")
    def _refuse_null_for_required_fields(self) -> Self:
        for name in self.not_nullable:
            if name in self.model_fields_set and getattr(self, name) is None:
                raise ValueError(f"{to_camel(name)} cannot be null")
        return self


class View(Model):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, defer_build=True)
