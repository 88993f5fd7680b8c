"""Every repository path that the documentation and the code's comments name exists in the tree.

The rule, kept simple on purpose:

- Read: README.md and docs/**/*.md (all their text); the comments of the sources under csrc/, include/,
  op_plugin/, python/, scripts/, tests/ and setup.py (C, C++, CUDA: ``//`` and ``/* */``; Python: ``#`` comments
  and docstrings; shell: ``#`` comments). Code itself is not read: a string in code is the code's business.
- A repository path is a word that starts with ``csrc/``, ``include/``, ``op_plugin/``, ``python/``,
  ``scripts/``, ``tests/`` or ``docs/`` and names at least one more file or folder after it
  (``csrc/comm/shm/``, ``tests/support/launch.py``, ``csrc/comm/nccl/nccl_comm.{h,cpp}``). A word that continues another
  one (``$ASCEND_HOME_PATH/include/acl``, ``atb_home/include/atb``) is not one.
- It must exist: ``{a,b}`` means both, ``*`` and a ``<placeholder>`` match any name, and punctuation that ends
  a sentence (``.``, ``,``, ``:``) is not part of it.
- Paths of other projects' trees that our docs name on purpose are listed in FOREIGN, with whose they are.
"""

from __future__ import annotations

import ast
import glob
import io
import re
import tokenize
from pathlib import Path

import pytest

from tests.support.paths import REPO_ROOT

ROOTS = ("csrc", "include", "op_plugin", "python", "scripts", "tests", "docs")
PATH = re.compile(r"(?<![\w./$~-])((?:" + "|".join(ROOTS) + r")/[\w.*<>{},+/-]+)")

# Paths in other repositories, named as they stand there.
FOREIGN = (
    "tests/apitest",  # ATB's own test tree (scripts/run_atb_tests.py runs its files)
)

C_LIKE = {".c", ".h", ".cpp", ".cu", ".hpp", ".cuh"}
SOURCE_DIRS = ("csrc", "include", "op_plugin", "python", "scripts", "tests")
C_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def _blank_code(text: str, comments: list[tuple[int, int]]) -> str:
    """`text` with everything outside the (start, end) spans blanked, its lines kept where they were."""
    out, at = [], 0
    for start, end in comments:
        out += ["\n" * text.count("\n", at, start), text[start:end]]
        at = end
    return "".join(out)


def _c_comments(text: str) -> str:
    return _blank_code(text, [m.span() for m in C_COMMENT.finditer(text)])


def _python_comments(text: str) -> str:
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    spans = []
    try:
        docstrings = {(body[0].lineno, body[0].col_offset) for node in ast.walk(ast.parse(text))
                      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                      and (body := node.body) and isinstance(body[0], ast.Expr)
                      and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str)}
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            is_doc = tok.type == tokenize.STRING and tok.start in docstrings
            if tok.type == tokenize.COMMENT or is_doc:
                spans.append((offsets[tok.start[0] - 1] + tok.start[1], offsets[tok.end[0] - 1] + tok.end[1]))
    except (SyntaxError, tokenize.TokenError):
        return ""
    return _blank_code(text, spans)


def _shell_comments(text: str) -> str:
    return _blank_code(text, [m.span() for m in re.finditer(r"(?:^|(?<=\s))#[^\n]*", text, re.M)])


def _readable() -> dict[Path, str]:
    """{file: its text where this test reads it, blank elsewhere (lines keep their numbers)}."""
    out = {p: p.read_text() for p in [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").rglob("*.md"))]}
    files = [REPO_ROOT / "setup.py"]
    for d in SOURCE_DIRS:
        files += sorted(p for p in (REPO_ROOT / d).rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    for p in files:
        if p.suffix in C_LIKE:
            out[p] = _c_comments(p.read_text(errors="replace"))
        elif p.suffix == ".py":
            out[p] = _python_comments(p.read_text(errors="replace"))
        elif p.suffix == ".sh":
            out[p] = _shell_comments(p.read_text(errors="replace"))
    return out


def _expand(path: str) -> list[str]:
    m = re.search(r"\{([^{}]*)\}", path)
    if not m:
        return [path]
    return [q for alt in m.group(1).split(",") for q in _expand(path[: m.start()] + alt + path[m.end() :])]


def _missing(path: str) -> list[str]:
    return [q for q in _expand(path) if not glob.glob(str(REPO_ROOT / re.sub(r"<[^<>/]*>", "*", q)), recursive=True)]


def named_paths() -> list[tuple[str, int, str]]:
    """(file, line, path) for every repository path named where this test reads."""
    found = []
    for file, text in _readable().items():
        for number, line in enumerate(text.splitlines(), 1):
            for m in PATH.finditer(line):
                path = m.group(1).rstrip(".,:")
                if "/" in path and not path.startswith(FOREIGN):
                    found.append((str(file.relative_to(REPO_ROOT)), number, path))
    return found


@pytest.mark.skipif(not (REPO_ROOT / "README.md").is_file(), reason="needs the source tree")
def test_every_path_named_in_docs_and_comments_exists():
    paths = named_paths()
    assert len(paths) > 100, "the scan found almost no paths: the rule no longer matches how the docs write them"
    stale = [f"{file}:{line}: {path} ({', '.join(_missing(path))} not found)"
             for file, line, path in paths if _missing(path)]
    assert not stale, "paths that name nothing in the tree:\n" + "\n".join(stale)


def test_the_rule_reads_what_it_should():
    assert _expand("csrc/comm/nccl/nccl_comm.{h,cpp}") == ["csrc/comm/nccl/nccl_comm.h", "csrc/comm/nccl/nccl_comm.cpp"]
    text = "see `csrc/comm/<backend>/` and $HOME/include/acl, tests/support/launch.py."
    assert [m.group(1) for m in PATH.finditer(text)] == ["csrc/comm/<backend>/", "tests/support/launch.py."]
    assert _c_comments('int a; // csrc/x.h\n/* tests/y.py */ "csrc/z.h"') == "// csrc/x.h\n/* tests/y.py */"
    assert _c_comments('"a"\n\n// b') == "\n\n// b"  # lines keep their numbers
    assert "csrc/a.h" in _python_comments('"""csrc/a.h"""\nX = "csrc/b.h"  # tests/c.py\n')
    assert "csrc/b.h" not in _python_comments('"""csrc/a.h"""\nX = "csrc/b.h"  # tests/c.py\n')
