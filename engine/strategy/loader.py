# SPDX-License-Identifier: MIT
"""Find a strategy class by reference, wherever a strategy is named.

A reference is ``CLASS`` with what holds it in front of a colon:

* ``path/to/my_strats.py:TinyBuy`` — a Python file anywhere (relative paths are relative to
  the configuration file's folder, or to the current directory on a command line). The file's
  folder goes on ``sys.path`` first, so the file may import its neighbours.
* ``package.module:TinyBuy`` — an importable module.
* ``MarketMaker`` — a built-in strategy of :mod:`engine.strategy.examples`.

Every failure is a :class:`StrategyLoadError` with one line naming the reference and, when
the strategy's own code failed, the file, the line and the exception — never a traceback.
"""

import importlib
import importlib.util
import os
import sys
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType

from engine.strategy.base import Strategy

#: Where bare class names (``"MarketMaker"``) are looked up.
BUILTIN_MODULE = "engine.strategy.examples"


class StrategyLoadError(ValueError):
    """A strategy reference could not be turned into a strategy; one line says why."""


def split_reference(ref: str) -> tuple[str, str]:
    """Return ``(holder, class_name)`` of ``ref``; ``holder`` is ``""`` for a bare name."""
    text = ref.strip()
    holder, sep, cls_name = text.rpartition(":")
    if not cls_name.isidentifier() or (sep and not holder):
        raise StrategyLoadError(
            f"strategy {ref!r}: write FILE.py:Class, package.module:Class or a built-in Class name"
        )
    return holder, cls_name


def is_file_holder(holder: str) -> bool:
    """Return whether the part before the colon names a file (not a module)."""
    return holder.endswith(".py") or "/" in holder or os.sep in holder


def resolve_reference(ref: str, base_dir: Path | None = None) -> str:
    """Return ``ref`` with a relative file path made absolute (against ``base_dir`` or cwd)."""
    holder, cls_name = split_reference(ref)
    if not is_file_holder(holder):
        return ref.strip()
    return f"{_file_of(holder, base_dir)}:{cls_name}"


def _file_of(holder: str, base_dir: Path | None) -> Path:
    path = Path(holder).expanduser()
    if not path.is_absolute():
        path = (base_dir or Path.cwd()) / path
    return path.resolve()


def _where(error: BaseException, near: Path | None) -> str:
    """Return ``file, line N: Type: message`` of the frame that raised, the strategy's own first."""
    if isinstance(error, SyntaxError) and error.filename:
        return f"{error.filename}, line {error.lineno}: {type(error).__name__}: {error.msg}"
    frames = traceback.extract_tb(error.__traceback__)
    own = [f for f in frames if near is not None and Path(f.filename).parent == near]
    outside = [f for f in frames if "importlib" not in f.filename]
    text = str(error).splitlines()[0] if str(error) else ""
    what = f"{type(error).__name__}: {text}" if text else type(error).__name__
    chosen = own or outside or list(frames)
    if not chosen:
        return what
    return f"{chosen[-1].filename}, line {chosen[-1].lineno}: {what}"


def _import_file(ref: str, path: Path) -> ModuleType:
    if not path.is_file():
        raise StrategyLoadError(f"strategy {ref}: no such file {path}")
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    stamp = path.stat().st_mtime_ns
    name = path.stem if path.stem.isidentifier() else "_qw_strategy"
    existing = sys.modules.get(name)
    if existing is not None:
        same = getattr(existing, "__file__", None) == str(path)
        if same and getattr(existing, "__qw_mtime__", None) == stamp:
            return existing  # the same file, unchanged: one module for every strategy it holds
        if not same:  # a module of that name is something else: do not shadow it
            name = f"_qw_strategy_{abs(hash(str(path))):x}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise StrategyLoadError(f"strategy {ref}: {path} cannot be imported as Python")
    module = importlib.util.module_from_spec(spec)
    module.__qw_mtime__ = stamp  # type: ignore[attr-defined]
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # the user's code: any exception, one line
        sys.modules.pop(name, None)
        raise StrategyLoadError(f"strategy {ref}: {_where(e, path.parent)}") from None
    return module


def _import_module(ref: str, name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name is not None and (name == e.name or name.startswith(e.name + ".")):
            raise StrategyLoadError(
                f"strategy {ref}: no module named {e.name!r} (give a file path, "
                "path/to/file.py:Class, or put its folder on PYTHONPATH)"
            ) from None
        raise StrategyLoadError(f"strategy {ref}: {_where(e, None)}") from None
    except Exception as e:
        raise StrategyLoadError(f"strategy {ref}: {_where(e, None)}") from None


def load_strategy_class(ref: str, base_dir: Path | None = None) -> type[Strategy]:
    """Return the :class:`Strategy` subclass ``ref`` names (see the module docstring).

    Raises
    ------
    StrategyLoadError
        One line: no such file or module, the file's code failed (file, line, exception),
        no such class, or not a Strategy.
    """
    holder, cls_name = split_reference(ref)
    if is_file_holder(holder):
        path = _file_of(holder, base_dir)
        module = _import_file(ref, path)
        where = str(path)
    else:
        where = holder or BUILTIN_MODULE
        module = _import_module(ref, where)
    cls = getattr(module, cls_name, None)
    if cls is None:
        found = sorted(
            n
            for n, v in vars(module).items()
            if isinstance(v, type) and issubclass(v, Strategy) and v is not Strategy
        )
        raise StrategyLoadError(
            f"strategy {ref}: {where} has no class {cls_name} "
            f"(strategies there: {', '.join(found) or 'none'})"
        )
    if not (isinstance(cls, type) and issubclass(cls, Strategy)) or cls is Strategy:
        raise StrategyLoadError(
            f"strategy {ref}: {cls_name} in {where} is not a subclass of "
            "engine.strategy.base.Strategy"
        )
    return cls


def build_strategy(
    ref: str,
    strategy_id: int,
    symbols: Sequence[str],
    parameters: Mapping[str, object] | Sequence[tuple[str, object]] = (),
    base_dir: Path | None = None,
) -> Strategy:
    """Load ``ref`` and make the strategy; every failure is one :class:`StrategyLoadError` line."""
    cls = load_strategy_class(ref, base_dir)
    values = dict(parameters)
    try:
        return cls(strategy_id, list(symbols), **values)
    except ValueError as e:  # the base class and the parameters say what was wrong
        raise StrategyLoadError(f"strategy {ref} (id {strategy_id}): {e}") from None
    except Exception as e:  # the strategy's own __init__
        near = Path(sys.modules[cls.__module__].__file__ or ".").parent
        raise StrategyLoadError(f"strategy {ref} (id {strategy_id}): {_where(e, near)}") from None
