"""Locating an exception in the user's code: the frame named is the user's, not hetgym's or a library's."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from hetgym.atomic import atomic_write
from hetgym.cli._common import parse_options
from hetgym.sim.cluster import get_cluster
from hetgym.sim.errors import HetgymError
from hetgym.sim.usercode import UserCodeError, describe, locate

USER_CODE = """import json


def index_error():
    return [][1]


def bad_json():
    return json.loads("{")
"""


def _user_module(folder: Path) -> ModuleType:
    path = folder / "user_mod.py"
    path.write_text(USER_CODE)
    spec = importlib.util.spec_from_file_location("user_mod_for_usercode_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _raised_through_hetgym(tmp_path: Path, user_function: str) -> BaseException:
    """What ``user_function`` raises when hetgym's code (an atomic write) calls it."""
    module = _user_module(tmp_path)
    with pytest.raises(Exception) as caught:
        atomic_write(tmp_path / "out.txt", lambda _: getattr(module, user_function)())
    return caught.value


def test_the_users_frame_is_named_not_hetgyms_nor_the_callers(tmp_path: Path) -> None:
    exc = _raised_through_hetgym(tmp_path, "index_error")
    assert locate(exc) == (str(tmp_path / "user_mod.py"), 5)
    assert describe(exc).startswith("IndexError: list index out of range (")
    assert describe(exc).endswith("user_mod.py, line 5)")


def test_a_library_the_user_called_is_passed_over_for_the_users_line(tmp_path: Path) -> None:
    exc = _raised_through_hetgym(tmp_path, "bad_json")
    assert locate(exc) == (str(tmp_path / "user_mod.py"), 9)  # not json/decoder.py, where it was raised


def test_a_syntax_error_names_its_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.py"
    path.write_text("x = 1\nif x\n")
    with pytest.raises(SyntaxError) as caught:
        compile(path.read_text(), str(path), "exec")
    assert locate(caught.value) == (str(path), 2)
    wrapped = UserCodeError("imports: broken.py failed", caught.value)
    assert str(wrapped).startswith("imports: broken.py failed: SyntaxError: ")
    assert str(wrapped).endswith("broken.py, line 2)") and wrapped.where == (str(path), 2)
    assert describe(wrapped) == str(wrapped)  # named once, not wrapped again


def test_hetgyms_own_errors_name_no_user_code() -> None:
    with pytest.raises(HetgymError) as unknown:
        get_cluster("no-such-preset")
    assert locate(unknown.value) is None
    assert describe(unknown.value) == f"UnknownNameError: {unknown.value}"  # its message says what to fix
    with pytest.raises(ValueError) as bad:
        parse_options(["no-equals-sign"], scoped=False)
    assert locate(bad.value) is None
    text = describe(bad.value)
    assert text.startswith("ValueError: option 'no-equals-sign' is not key=value (in hetgym's ")
    assert "_common.py, line " in text
