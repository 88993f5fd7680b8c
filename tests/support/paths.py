"""Where the checkout is, for tests that read its files (README, scripts/, sources) wherever they live."""

from __future__ import annotations

from pathlib import Path

# tests/support/paths.py -> the checkout: one definition, so moving a test never changes what it reads.
REPO_ROOT = Path(__file__).resolve().parents[2]
