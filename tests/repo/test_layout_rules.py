"""Rules of the tree's layout that a reader relies on (README "Layout of the code")."""

from __future__ import annotations

import re

import pytest

from tests.support.paths import REPO_ROOT

pytestmark = pytest.mark.skipif(not (REPO_ROOT / "include").is_dir(), reason="needs the source tree")


def test_no_vendor_header_shares_a_name_with_a_file_of_ours():
    """include/ holds the vendors' headers as we write them; `#include "context.h"` in include/atb/ must never
    read as one of our sources: no file under csrc/ or op_plugin/ has the name (without its ending) of a
    header under include/."""
    vendor = {p.stem: p for p in (REPO_ROOT / "include").rglob("*.h")}
    ours = [p for d in ("csrc", "op_plugin") for p in (REPO_ROOT / d).rglob("*") if p.suffix in {".h", ".cpp", ".cu"}]
    clashes = [f"{p.relative_to(REPO_ROOT)} ~ {vendor[p.stem].relative_to(REPO_ROOT)}"
               for p in ours if p.stem in vendor]
    assert not clashes, clashes


def test_each_emulated_library_is_built_from_its_own_folder():
    """csrc/emulated/<lib>/ is one library each (hccl: libhccl.so, acl: libascendcl.so, atb: libatb.so), and
    setup.py builds each from its folder alone."""
    setup = (REPO_ROOT / "setup.py").read_text()
    for folder, library in {"hccl": "libhccl", "acl": "libascendcl", "atb": "libatb"}.items():
        call = re.search(r'native_library\(\s*"atb_ops\.[\w.]*\.' + library + r'",\s*sources\(([^)]*)\)', setup)
        assert call, f"setup.py builds no {library}.so with native_library(..., sources(...))"
        patterns = re.findall(r'"([^"]+)"', call.group(1))
        assert patterns and all(p.startswith(f"csrc/emulated/{folder}/") for p in patterns), patterns
