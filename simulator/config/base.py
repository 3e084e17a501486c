"""The base of every section model of the pydantic boundary."""
from __future__ import annotations

import dataclasses
from typing import Annotated, ClassVar

from pydantic import BaseModel, BeforeValidator, ConfigDict
from pydantic_core import PydanticCustomError


class Strict(BaseModel):
    """A section of a scenario (or a sweep, or a plan): unknown keys are errors; a validated section is
    immutable. `SPEC`: the frozen dataclass of the simulator's inside that `spec()` builds from the
    section's fields of the same names (nested sections converted too), what the core receives."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    SPEC: ClassVar[type | None] = None

    def spec(self):
        return self.SPEC(**{f.name: _spec(getattr(self, f.name)) for f in dataclasses.fields(self.SPEC)})


def _spec(value):
    return value.spec() if isinstance(value, Strict) and value.SPEC is not None else value


def _version_is_text(value):
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        raise PydanticCustomError("version_text", "give the version as a quoted string (YAML reads {v} as a "
                                                  "number), e.g. \"0.10.0\"", {"v": value})
    return value


# a release number written as text ("0.10.0"; YAML would read 0.10 as a float)
VersionText = Annotated[str | None, BeforeValidator(_version_is_text)]
