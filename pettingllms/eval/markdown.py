"""Generated sections of hand-written Markdown files (the results pages)."""

from __future__ import annotations

from pathlib import Path


def replace_section(path: Path, start: str, end: str, section: str) -> None:
    """Put `section` (which begins with the `start` marker and ends with the `end` marker) into the file at `path`:
    in place of the text between the markers if both are there, else appended. A missing file starts as
    "# Results"."""
    text = path.read_text() if path.is_file() else "# Results\n"
    if start in text and end in text:
        text = text[: text.index(start)] + section + text[text.index(end) + len(end) :]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
