"""What the template routes take through `Depends`; the composition root provides it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.core.api.provided import NotProvided

if TYPE_CHECKING:
    from switchboard.templates.service import TemplateService


def template_service() -> TemplateService:
    """A number's templates, from the cache or the Graph API."""
    raise NotProvided(template_service)
