"""Read and write the job's JSONL rows, with errors that name the file and line."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from rewardrouter.errors import RewardRouterError


class DataError(RewardRouterError):
    """An input file that cannot be read as JSONL rows."""


def read_rows(path: Path, limit: int | None = None) -> list[dict[str, Any]]:
    """Every JSON object line of ``path`` (blank lines skipped), up to ``limit`` rows."""
    if not path.is_file():
        raise DataError(f"data.path: file not found: {path}; pass data.path=<a JSONL file>")
    rows: list[dict[str, Any]] = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(
                    f"{path}:{number}: invalid JSON ({exc.msg} at column {exc.colno}); "
                    f"expected one JSON object per line"
                ) from None
            if not isinstance(row, dict):
                raise DataError(
                    f"{path}:{number}: found a JSON {type(row).__name__}; expected an object with "
                    f"prompt, response, label and metadata"
                )
            rows.append(row)
            if limit is not None and len(rows) >= limit:
                break
    return rows


def write_rows(path: Path, rows: Iterable[Mapping[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")


def chunks(rows: list[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    for start in range(0, len(rows), size):
        yield rows[start : start + size]
