# SPDX-License-Identifier: MIT
"""Strategy parameters: declared with a type, bounds and a default; checked on every change."""

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


class ParameterError(ValueError):
    """A parameter value was refused; the message names the parameter, value and rule."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Param:
    """One declared parameter of a strategy.

    Parameters
    ----------
    name : str
        Identifier used in code, settings files and the console.
    kind : type
        ``int``, ``float``, ``bool`` or ``str``.
    default : Any
        Value when nothing else is given (must pass the bounds).
    min, max : float | None
        Inclusive bounds for numbers.
    choices : tuple[str, ...]
        Allowed values for strings (empty: any).
    help : str
        One line for the console's parameter editor.
    """

    name: str
    kind: type
    default: Any
    min: float | None = None
    max: float | None = None
    choices: tuple[str, ...] = ()
    help: str = ""

    def __post_init__(self) -> None:
        if self.kind not in _CONVERT:
            raise TypeError(f"parameter {self.name!r}: kind must be int, float, bool or str")
        self.coerce(self.default)

    def coerce(self, value: object) -> Any:
        """Return ``value`` converted to :attr:`kind`; raise :class:`ParameterError` if invalid."""
        try:
            out = _CONVERT[self.kind](value)
        except (TypeError, ValueError):
            raise ParameterError(
                f"parameter {self.name!r}: {value!r} is not a valid {self.kind.__name__}"
            ) from None
        if self.min is not None and out < self.min:
            raise ParameterError(f"parameter {self.name!r}: {out} is below the minimum {self.min}")
        if self.max is not None and out > self.max:
            raise ParameterError(f"parameter {self.name!r}: {out} is above the maximum {self.max}")
        if self.choices and out not in self.choices:
            raise ParameterError(
                f"parameter {self.name!r}: {out!r} is not one of {', '.join(self.choices)}"
            )
        return out


def _to_bool(value: object) -> bool:
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("true", "1", "yes"):
            return True
        if text in ("false", "0", "no"):
            return False
        raise ValueError(value)
    if isinstance(value, bool | int):
        return bool(value)
    raise ValueError(value)


def _to_int(value: object) -> int:
    if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
        raise ValueError(value)
    if not isinstance(value, int | float | str):
        raise TypeError(value)
    return int(value)


def _to_float(value: object) -> float:
    if isinstance(value, bool):
        raise ValueError(value)
    if not isinstance(value, int | float | str):
        raise TypeError(value)
    out = float(value)
    if not math.isfinite(out):
        raise ValueError(value)
    return out


def _to_str(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError(value)
    return value


_CONVERT: dict[type, Callable[[object], Any]] = {
    bool: _to_bool,
    int: _to_int,
    float: _to_float,
    str: _to_str,
}


def resolve(
    declared: tuple[Param, ...], values: Mapping[str, object], current: Mapping[str, object]
) -> dict[str, Any]:
    """Return ``current`` updated with ``values``, every value checked; nothing changes on error.

    Raises
    ------
    ParameterError
        For an unknown name or a refused value (the first one found, by declaration order).
    """
    by_name = {p.name: p for p in declared}
    unknown = sorted(set(values) - set(by_name))
    if unknown:
        raise ParameterError(
            f"unknown parameter {unknown[0]!r}; declared: {', '.join(by_name) or 'none'}"
        )
    out = dict(current)
    for p in declared:
        if p.name in values:
            out[p.name] = p.coerce(values[p.name])
        elif p.name not in out:
            out[p.name] = p.default
    return out
