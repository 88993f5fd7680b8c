"""The bench's one table printer: fixed-width columns, nccl-tests style, for every bench's table.

A table is a list of blocks side by side; a block is fields printed one space apart, read from one part of a row
(``Block.pick``), shown as ``--`` across its whole width when that part is missing. A block may carry a label:
when any does, a line above the column titles centres each label over its block and the unlabelled blocks after
it (the nccl-tests table's library names over their cells).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


def _whole(row: Any) -> Any:
    """The default Block.pick: fields read the whole row."""
    return row


@dataclass(frozen=True)
class Field:
    """One column: its title and how a value is written.

    Attributes:
        title: the column title.
        width: characters the title and every value are padded to.
        text: the value's text, from what the block picked.
        align: ">" right (numbers), "<" left (names).
    """

    title: str
    width: int
    text: Callable[[Any], str]
    align: str = ">"


@dataclass(frozen=True)
class Block:
    """Fields printed one space apart.

    Attributes:
        fields: the block's columns.
        gap: what separates the block from the one before it.
        pick: the part of a row its fields read; None there prints ``--`` across the block.
        label: centred above the block (and the unlabelled blocks after it); None: part of the previous label.
    """

    fields: tuple[Field, ...]
    gap: str = " "
    pick: Callable[[Any], Any] = _whole
    label: str | None = ""

    @property
    def width(self) -> int:
        """The block's characters: its fields and the spaces between them."""
        return sum(f.width for f in self.fields) + len(self.fields) - 1


def _join(blocks: Sequence[Block], cells: Sequence[str]) -> str:
    """The blocks' texts, each after its gap (the first one's gap is the line's prefix's business)."""
    return "".join(cell if i == 0 else block.gap + cell for i, (block, cell) in enumerate(zip(blocks, cells,
                                                                                            strict=True)))


def title_lines(lines: Sequence[str]) -> list[str]:
    """Lines of a table's title, each behind "# " (an empty one is a lone "#")."""
    return [f"# {line}" if line else "#" for line in lines]


def header(blocks: Sequence[Block], prefix: str = "") -> list[str]:
    """The label line (only where a block has a label) and the column titles.

    Args:
        blocks: the table.
        prefix: what starts each line ("# " where the header reads as a comment).

    Returns:
        The header's lines.
    """
    lines = []
    if any(b.label for b in blocks):
        spans: list[tuple[Block, str, int]] = []  # (first block, label, width)
        for b in blocks:
            if b.label is None and spans:
                first, label, width = spans[-1]
                spans[-1] = (first, label, width + len(b.gap) + b.width)
            else:
                spans.append((b, b.label or "", b.width))
        cells = [f"{label:^{width}}" for _, label, width in spans]
        lines.append((prefix + _join([first for first, _, _ in spans], cells)).rstrip())
    titles = [" ".join(f"{f.title:{f.align}{f.width}}" for f in b.fields) for b in blocks]
    lines.append(prefix + _join(blocks, titles))
    return lines


def row(blocks: Sequence[Block], value: Any, prefix: str = "") -> str:
    """One row of the table.

    Args:
        blocks: the table.
        value: the row (each block picks its part of it).
        prefix: what starts the line (as wide as the header's, so that the columns line up).

    Returns:
        The line.
    """
    cells = []
    for b in blocks:
        part = b.pick(value)
        if part is None:
            cells.append(f"{'--':>{b.width}}")
        else:
            cells.append(" ".join(f"{f.text(part):{f.align}{f.width}}" for f in b.fields))
    return prefix + _join(blocks, cells)


def render(title: Sequence[str], blocks: Sequence[Block], rows: Sequence[Any]) -> str:
    """A whole table at once: its title lines, header and rows (no prefixes).

    Args:
        title: the title's lines (each printed behind "# ").
        blocks: the table.
        rows: its rows.

    Returns:
        The table's text.
    """
    return "\n".join(title_lines(title) + header(blocks) + [row(blocks, r) for r in rows])
