# SPDX-License-Identifier: MIT
"""Strategies by reference: a file anywhere, a module, a built-in name; one-line errors."""

import sys
from pathlib import Path

import pytest

from engine.strategy.examples import MarketMaker
from engine.strategy.loader import (
    StrategyLoadError,
    build_strategy,
    load_strategy_class,
    resolve_reference,
)

STRATEGY = """\
from engine.strategy.base import Strategy
from engine.strategy.params import Param
from helper import SIZE


class Mine(Strategy):
    name = "mine"
    params = (Param(name="qty_lots", kind=int, default=SIZE, min=1, max=10),)


class NotOne:
    pass
"""


@pytest.fixture
def strategy_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "strats"
    folder.mkdir()
    (folder / "helper.py").write_text("SIZE = 3\n")
    (folder / "my_strats_loader_test.py").write_text(STRATEGY)
    return folder


def test_a_file_outside_the_project_loads_with_its_folder_on_the_path(
    strategy_dir: Path, tmp_path: Path
) -> None:
    cls = load_strategy_class("strats/my_strats_loader_test.py:Mine", base_dir=tmp_path)
    assert cls.__name__ == "Mine"
    assert str(strategy_dir) in sys.path  # so the file imported its neighbour "helper"
    s = build_strategy(str(strategy_dir / "my_strats_loader_test.py") + ":Mine", 5, ["X"])
    assert s.p == {"qty_lots": 3}
    assert resolve_reference("strats/my_strats_loader_test.py:Mine", tmp_path) == (
        f"{strategy_dir / 'my_strats_loader_test.py'}:Mine"
    )


def test_module_and_builtin_references() -> None:
    assert load_strategy_class("engine.strategy.examples:MarketMaker") is MarketMaker
    assert load_strategy_class("MarketMaker") is MarketMaker


def test_an_edited_file_is_read_again(tmp_path: Path) -> None:
    path = tmp_path / "edited_strategy_loader_test.py"
    path.write_text(
        "from engine.strategy.base import Strategy\nclass A(Strategy):\n    name = 'one'\n"
    )
    assert load_strategy_class(f"{path}:A").name == "one"
    path.write_text(
        "from engine.strategy.base import Strategy\nclass A(Strategy):\n    name = 'two'\n"
    )
    import os

    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000_000))
    assert load_strategy_class(f"{path}:A").name == "two"


@pytest.mark.parametrize(
    ("source", "ref", "expected"),
    [
        ("x = 1\ny = 1 / 0\n", "{f}:A", "{f}, line 2: ZeroDivisionError: division by zero"),
        ("def f(:\n", "{f}:A", "{f}, line 1: SyntaxError: "),
        (
            "import no_such_module_qw\n",
            "{f}:A",
            "{f}, line 1: ModuleNotFoundError: No module named 'no_such_module_qw'",
        ),
        (
            "from engine.strategy.base import Strategy\nclass B(Strategy):\n    pass\n",
            "{f}:A",
            "{f} has no class A (strategies there: B)",
        ),
        ("class A:\n    pass\n", "{f}:A", "A in {f} is not a subclass of engine.strategy.base"),
    ],
)
def test_a_bad_file_is_one_line_naming_file_line_and_exception(
    tmp_path: Path, source: str, ref: str, expected: str
) -> None:
    f = tmp_path / "bad_strategy_loader_test.py"
    f.write_text(source)
    with pytest.raises(StrategyLoadError) as e:
        load_strategy_class(ref.format(f=f))
    text = str(e.value)
    assert "\n" not in text
    assert text.startswith(f"strategy {f}:A: ")
    assert expected.format(f=f) in text


def test_missing_things_are_named(tmp_path: Path) -> None:
    with pytest.raises(StrategyLoadError, match=r"no such file .*nowhere\.py"):
        load_strategy_class("nowhere.py:A", base_dir=tmp_path)
    with pytest.raises(StrategyLoadError, match="no module named 'no_such_pkg_qw'"):
        load_strategy_class("no_such_pkg_qw.mod:A")
    with pytest.raises(StrategyLoadError, match=r"write FILE\.py:Class"):
        load_strategy_class("file.py:")


def test_a_failing_constructor_is_one_line_with_its_line(tmp_path: Path) -> None:
    f = tmp_path / "init_fails_loader_test.py"
    f.write_text(
        "from engine.strategy.base import Strategy\n"
        "class A(Strategy):\n"
        "    def __init__(self, sid, symbols, **p):\n"
        "        super().__init__(sid, symbols, **p)\n"
        "        self.x = {}['missing']\n"
    )
    with pytest.raises(StrategyLoadError) as e:
        build_strategy(f"{f}:A", 3, ["X"])
    assert str(e.value) == f"strategy {f}:A (id 3): {f}, line 5: KeyError: 'missing'"
    with pytest.raises(StrategyLoadError, match=r"\(id 4\): unknown parameter 'nope'"):
        build_strategy("MarketMaker", 4, ["X"], [("nope", 1)])
