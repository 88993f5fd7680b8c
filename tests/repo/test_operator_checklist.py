"""README's "Adding an operator" checklist, kept true for every operator the C++ registry knows.

Every operator registered in csrc/ops (atb_ops._C.operation_names(), the registry itself) has:
- a C++ param spec: ``spec("<Name>", ...)`` in csrc/emulated/atb/param_specs.cpp (ATB's C++ API makes it);
- a torch_atb param class (``OP_NAME = "<Name>"``), where ATB's torch_atb has one (ATB_TORCH_ATB_HAS_NO_PARAM
  lists those it has none for);
- a row in README's operator table (its first cell names the operator).
"""

from __future__ import annotations

import re

import pytest

import atb_ops
from atb_ops.torch_atb.params import PARAM_TYPES
from tests.support.paths import REPO_ROOT

PARAM_SPECS = REPO_ROOT / "csrc/emulated/atb/param_specs.cpp"

# Operators ATB's torch_atb (8.x) has no param class for: torch_atb users reach them through OperationTorch.
ATB_TORCH_ATB_HAS_NO_PARAM = {"AllGatherVOperation", "AllToAllVOperation", "AllToAllVV2Operation", "SendOperation",
                              "RecvOperation"}

needs_source = pytest.mark.skipif(not PARAM_SPECS.is_file(), reason="needs the source tree")


def registered() -> list[str]:
    names = atb_ops._C.operation_names()
    assert "AllToAllVV2Operation" in names, names
    return names


def readme_table_operators() -> set[str]:
    """The operators named in the first cell of the rows of README's operator table (under "The ATB surface")."""
    text = (REPO_ROOT / "README.md").read_text()
    section = text[text.index("## The ATB surface") :]
    table = re.search(r"^\| operator \|.*?\n(?:\|.*\n)+", section, re.M)
    assert table, "README's operator table (a header row '| operator | ...') is gone"
    names = set()
    for row in table.group(0).splitlines()[2:]:
        names.update(re.findall(r"`(\w+Operation)`", row.split("|")[1]))
    return names


@needs_source
def test_every_registered_operator_has_a_cpp_param_spec():
    specs = set(re.findall(r'\bspec\("(\w+Operation)"', PARAM_SPECS.read_text()))
    missing = [name for name in registered() if name not in specs]
    assert not missing, f"no specOf(...) in {PARAM_SPECS.relative_to(REPO_ROOT)} makes {missing}"


def test_every_registered_operator_has_a_torch_atb_param_where_atb_has_one():
    params = {p.OP_NAME for p in PARAM_TYPES}
    missing = [name for name in registered() if name not in params and name not in ATB_TORCH_ATB_HAS_NO_PARAM]
    assert not missing, f"no torch_atb param class (python/atb_ops/torch_atb/params.py) for {missing}"
    assert not params - set(registered()), "a torch_atb param names an operator the registry does not know"
    assert not (params & ATB_TORCH_ATB_HAS_NO_PARAM), "ATB_TORCH_ATB_HAS_NO_PARAM lists one that has a param now"


@needs_source
def test_every_registered_operator_has_a_row_in_readmes_table():
    rows = readme_table_operators()
    assert not [name for name in registered() if name not in rows], rows
    assert not rows - set(registered()), f"README's table names operators the registry does not know: {rows}"
