"""The torch atb_ops runs under must be the torch it was built against: its native libraries use torch's C++
API, whose symbols change between releases, so a mismatch would otherwise surface as an undefined-symbol
traceback from the dynamic loader."""

from __future__ import annotations

from pathlib import Path

import torch

RECORD = Path(__file__).resolve().parent / "TORCH_BUILT_WITH"  # written by setup.py's build


def _release(version: str) -> tuple[int, ...]:
    """'2.13.0+cpu' -> (2, 13, 0): the local part (+cpu, +cu130) does not change the C++ API."""
    public = version.split("+", 1)[0]
    numbers = []
    for part in public.split("."):
        digits = "".join(c for c in part if c.isdigit()) if not part.isdigit() else part
        if not digits:
            break
        numbers.append(int(digits))
    return tuple(numbers)


def check_torch() -> None:
    """Raises ImportError naming both versions when the running torch is not the one atb_ops was built with.

    Raises:
        ImportError: The native part is missing, or was built against another torch release.
    """
    if not RECORD.is_file():
        raise ImportError(
            f"atb_ops' native libraries are not built in {RECORD.parent}: install the package "
            "(pip install --no-build-isolation <source>) or, in a checkout, run scripts/setup.sh"
        )
    built = RECORD.read_text().strip()
    if _release(built)[:3] != _release(torch.__version__)[:3]:
        raise ImportError(
            f"atb_ops was built against torch {built}, but torch {torch.__version__} is running; its native "
            "libraries only load under the torch they were built with. Rebuild it for this torch: "
            "pip install --no-build-isolation --force-reinstall --no-deps <atb_ops source>"
        )
