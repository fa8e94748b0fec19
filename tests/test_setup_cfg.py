"""setup.cfg holds options that tools read: setuptools' ``[bdist_wheel]`` (the wheel's stable-ABI
tag) and mutmut's ``[mutmut]`` (tests/mutation/run.sh). These tests check that setuptools sees the
option, that it agrees with pyproject.toml, and that every path and test mutmut is told about
exists. CI also builds a wheel and fails unless its tag is the stable ABI's (.ci/docs).
"""
from __future__ import annotations

import configparser
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SETUP_CFG = ROOT / "setup.cfg"

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    tomllib = pytest.importorskip("tomli")


def read() -> configparser.ConfigParser:
    parser = configparser.ConfigParser()
    assert parser.read(SETUP_CFG, encoding="utf-8") == [str(SETUP_CFG)]
    return parser


def lines(value: str) -> list[str]:
    return [ln.strip() for ln in value.splitlines() if ln.strip()]


def test_the_wheel_tag_is_the_oldest_supported_python():
    """The stable-ABI tag names the oldest Python pyproject.toml supports (a wheel tagged for a
    newer one would refuse to install where the package claims to work, an older one would install
    where it does not)."""
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    major, minor = re.fullmatch(r">=\s*(\d+)\.(\d+)", requires).groups()
    assert read()["bdist_wheel"]["py_limited_api"] == f"cp{major}{minor}"


def test_setuptools_reads_the_wheel_option():
    """setuptools' own configuration reader finds the option for its bdist_wheel command (what a
    build does with it is checked by CI, which builds the wheel and reads its tag)."""
    dist_module = pytest.importorskip("setuptools.dist")
    dist = dist_module.Distribution()
    dist.parse_config_files(filenames=[str(SETUP_CFG)])
    source, value = dist.get_option_dict("bdist_wheel")["py_limited_api"]
    assert value == "cp310" and Path(source).name == "setup.cfg"


def test_every_module_and_test_mutmut_is_told_about_exists():
    """A module moved or a test renamed would make mutmut mutate nothing, or judge mutants with
    fewer tests than its recorded score assumed: every path and deselected test must exist."""
    section = read()["mutmut"]
    mutated = lines(section["only_mutate"])
    assert mutated and all((ROOT / p).is_file() for p in mutated), mutated
    selection = lines(section["pytest_add_cli_args_test_selection"])
    files = [s for s in selection if not s.startswith("--")]
    assert files and all((ROOT / p).is_file() for p in files), files
    for option in (s for s in selection if s.startswith("--deselect=")):
        path, test = option.split("=", 1)[1].split("::")
        assert path in files and re.search(rf"^def {test}\(", (ROOT / path).read_text(), re.M), option
