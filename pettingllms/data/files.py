"""Reading dataset rows through `datasets`: from the Hugging Face Hub or from local files in a dataset's schema.

`datasets` is imported lazily (the `data` extra); a missing install raises `DependencyNotInstalled`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import Any

from pettingllms.core.errors import ConfigError, DependencyNotInstalled

DataPath = str | PathLike[str] | Sequence[str | PathLike[str]]
"""One local file, or a list of them (parquet, json or jsonl, optionally compressed)."""


def datasets_module() -> Any:
    """The `datasets` package, or `DependencyNotInstalled` naming the extra."""
    try:
        import datasets
    except ImportError as error:
        raise DependencyNotInstalled(
            "loading this dataset needs the `datasets` package: pip install 'pettingllms[data]'"
        ) from error
    return datasets


def local_rows(path: DataPath) -> Iterable[Mapping[str, Any]]:
    """The rows of local files, read whole as one split; all files must share one format."""
    files = [str(path)] if isinstance(path, (str, PathLike)) else [str(p) for p in path]
    formats = {file_format(f) for f in files}
    if len(formats) != 1:
        raise ConfigError(f"mixed file formats in {files}: give only parquet or only JSON files")
    return datasets_module().load_dataset(formats.pop(), data_files=files, split="train")


def file_format(file: str) -> str:
    """`datasets`' builder name for a file: "parquet" or "json"."""
    suffixes = Path(file).suffixes
    if ".parquet" in suffixes:
        return "parquet"
    if ".json" in suffixes or ".jsonl" in suffixes:
        return "json"
    raise ConfigError(f"cannot tell the format of {file!r}: expected a .parquet, .json or .jsonl file")
