"""Command-line flags that set a scenario field (`draftsim run --workers 4` sets `simulation.workers`), and
refusals that name what the user typed.

A flag is applied as a `key=value` override, so the scenario's checks refuse its value naming the field it set:
`--workers 0` read "simulation.workers: an integer in 1..N ...", a field the user never typed. `named_as_typed`
renames such a refusal to the flag ("--workers: ... (overrides simulation.workers)"), and `refuse_set_beside`
refuses a `--set` of the same key before anything is read, naming both as typed.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterable, Iterator

from models.errors import FieldError
from simulator.errors import ScenarioError


@dataclass(frozen=True)
class FlagOverride:
    """`flag VALUE` on the command line, which sets the scenario field `key` to VALUE."""

    flag: str    # as typed: "--workers"
    key: str     # the field it sets: "simulation.workers"
    value: str

    @property
    def text(self) -> str:
        """The override it is applied as (`key=value`, as `--set` takes)."""
        return f"{self.key}={self.value}"

    def covers(self, field: str) -> bool:
        """A refusal naming `field` is about this flag's value: the field itself or one inside it."""
        return field == self.key or field.startswith(self.key + ".")


def given(flags: Iterable[FlagOverride | None]) -> list[FlagOverride]:
    return [flag for flag in flags if flag is not None]


def flag_override(flag: str, key: str, value: str | None) -> FlagOverride | None:
    """The override of a flag the user gave (None: not given)."""
    return None if value is None else FlagOverride(flag, key, value)


def refuse_set_beside(flags: list[FlagOverride], overrides: list[str]) -> None:
    """ScenarioError naming the flag when a `--set` (checked: simulator.config.scenario.check_overrides_once) sets
    its field, a mapping holding it or a key inside it: one of the two was ignored (the later one ran)."""
    from simulator.config.scenario import override_key

    for flag in flags:
        for text in overrides:
            key = ".".join(override_key(text))
            if flag.covers(key):
                raise ScenarioError(flag.flag, f"sets {flag.key}, and --set {text} sets it too; give it once")
            if flag.key.startswith(key + "."):
                raise ScenarioError(flag.flag, f"sets {flag.key}, and --set {text} replaces {key}, which holds it; "
                                               "give the value once")


@contextmanager
def named_as_typed(flags: list[FlagOverride]) -> Iterator[None]:
    """A refusal of a field one of `flags` set names the flag instead, with the field it overrides."""
    try:
        yield
    except FieldError as exc:
        flag = next((flag for flag in flags if flag.covers(exc.field)), None)
        if flag is None:
            raise
        raise ScenarioError(flag.flag, f"{exc.message} (overrides {exc.field})", exc.implied) from None
