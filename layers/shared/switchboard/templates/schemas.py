"""The template listing's answer (camelCase on the wire)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from switchboard.core.wire import View
from switchboard.templates.domain import TemplateDefinition, TemplateList, summary


class TemplateView(View):
    id: str | None
    name: str
    language: str
    status: str = Field(description="APPROVED, PENDING, REJECTED, PAUSED, DISABLED, ... (only APPROVED is sent).")
    category: str | None = Field(description="MARKETING, UTILITY or AUTHENTICATION.")
    parameter_format: str | None = Field(description="POSITIONAL (the default) or NAMED.")
    components: list[dict[str, Any]] = Field(description="The template's components, as Meta lists them.")
    takes: dict[str, Any] = Field(
        description=(
            "What a send gives it: `header` (`format`, and a TEXT header's placeholders), `body` (its "
            "placeholders, in order), `buttons` (each one's `index`, `type`, `subType` and `parameter`, "
            "null when it takes none)."
        )
    )

    @classmethod
    def of(cls, template: TemplateDefinition) -> TemplateView:
        return cls(
            id=template.id,
            name=template.name,
            language=template.language,
            status=template.status,
            category=template.category,
            parameter_format=template.parameter_format,
            components=template.components,
            takes=summary(template),
        )


class TemplateListView(View):
    number_id: str
    waba_id: str
    fetched_at: datetime = Field(description="When the list was read from the Graph API.")
    from_cache: bool = Field(description="Read from switchboard's cache (kept a few minutes), not from Meta now.")
    templates: list[TemplateView]

    @classmethod
    def of(cls, number_id: str, listing: TemplateList) -> TemplateListView:
        ordered = sorted(listing.templates, key=lambda t: (t.name, t.language))
        return cls(
            number_id=number_id,
            waba_id=listing.waba_id,
            fetched_at=listing.fetched_at,
            from_cache=listing.from_cache,
            templates=[TemplateView.of(t) for t in ordered],
        )
