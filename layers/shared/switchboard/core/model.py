"""The base of every pydantic model in switchboard."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Model(BaseModel):
    """Schemas are built on first use rather than at import: a Lambda container then pays at
    cold start only for the models its function actually validates."""

    model_config = ConfigDict(defer_build=True)
