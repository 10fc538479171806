"""The JSON config base: a dataclass saved as config.json inside every checkpoint and used to
rebuild the model, and the checks that keep a damaged or hostile file from making us allocate
without limit."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

# No config may describe a larger model (the paper's "big" one has 213M).
MAX_PARAMETERS = 2_000_000_000


class JsonConfig:
    """A dataclass config as the JSON a checkpoint stores: unknown fields are refused,
    not dropped."""

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict):
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown config fields: {sorted(unknown)}")
        return cls(**data)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2) + "\n")

    @classmethod
    def load(cls, path: str | Path):
        return cls.from_dict(json.loads(Path(path).read_text()))

    def validate(self) -> None:
        """Raise ValueError naming every field that is out of range;
        a family's config overrides it."""


def field_problems(cfg, integers: dict[str, tuple[int, int]], rates: tuple[str, ...] = (),
                    positive: tuple[str, ...] = (), flags: tuple[str, ...] = ()) -> list[str]:
    """What is wrong with a config's fields: integers in their [low, high], rates in [0, 1),
    positive numbers, true/false flags (a JSON true is no integer here, and 1 is no flag)."""
    problems = []
    for name, (low, high) in integers.items():
        value = getattr(cfg, name)
        if isinstance(value, bool) or not isinstance(value, int):
            problems.append(f"{name} must be an integer, not {value!r}")
        elif not low <= value <= high:
            problems.append(f"{name} = {value} is outside [{low}, {high}]")
    for name in rates:
        value = getattr(cfg, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
            problems.append(f"{name} must be a number in [0, 1), not {value!r}")
    for name in positive:
        value = getattr(cfg, name)
        if (isinstance(value, bool) or not isinstance(value, (int, float))
                or not 0.0 < value < float("inf")):
            problems.append(f"{name} must be a positive number, not {value!r}")
    for name in flags:
        if not isinstance(getattr(cfg, name), bool):
            problems.append(f"{name} must be true or false, not {getattr(cfg, name)!r}")
    return problems


def check_size(problems: list[str], estimate: int) -> None:
    """Add a problem when the parameter ``estimate`` is over MAX_PARAMETERS;
    raise when there are any."""
    if not problems and estimate > MAX_PARAMETERS:
        problems.append(f"the model would have about {estimate:,} parameters, "
                        f"more than {MAX_PARAMETERS:,}")
    if problems:
        raise ValueError("; ".join(problems))
