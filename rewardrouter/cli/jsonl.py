"""Read and write the job's JSONL rows, with errors that name the file, line and column.

Every line is checked before anything is scored, and every problem of the file is reported at
once (the first :data:`SHOWN`, and how many more): bytes that are not UTF-8, JSON that does not
parse (``NaN`` and ``Infinity`` included: they are not JSON), nesting too deep to read, lone
surrogates, and the row fields that :func:`~rewardrouter.sample.row_problems` checks.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from rewardrouter.checks import absent_column
from rewardrouter.errors import Problem, RewardRouterError
from rewardrouter.sample import RESPONSE_COLUMNS, response_problem, row_problems

#: Problems listed in one error; the rest are counted.
SHOWN = 20

#: The columns the job adds to every row it writes (:func:`rewardrouter.cli.score.output_row`);
#: a row holding them all is a job's output fed back as its input.
OUTPUT_COLUMNS = ("reward", "route", "level", "status", "terms", "shaped", "advantage")

#: IFEval's columns as the Hugging Face dataset has them: at the top level, beside no label.
IFEVAL_COLUMNS = ("instruction_id_list", "kwargs")

#: The first bytes of a Parquet file.
_PARQUET_MAGIC = b"PAR1"

# A \uD800-\uDFFF escape: the only way a JSON line can carry a lone surrogate.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")


class DataError(RewardRouterError):
    """An input file that cannot be read as JSONL rows, or rows that cannot be scored."""


@dataclass(frozen=True)
class Rows:
    """The rows of a JSONL file and the 1-based line each came from."""

    path: Path
    rows: list[dict[str, Any]]
    lines: list[int]

    def __len__(self) -> int:
        return len(self.rows)

    def at(self, i: int) -> str:
        """``"data.jsonl:12"``: where row ``i`` is."""
        return f"{self.path}:{self.lines[i]}"


def _reject(path: Path, problems: Sequence[str], what: str) -> NoReturn:
    shown = "\n".join(f"  - {p}" for p in problems[:SHOWN])
    more = f"\n  … and {len(problems) - SHOWN} more" if len(problems) > SHOWN else ""
    raise DataError(f"{path}: {len(problems)} problem(s) {what}:\n{shown}{more}")


def located(rows: Rows, problems: Iterable[tuple[int, str]], what: str) -> NoReturn:
    """Raise one :class:`DataError` listing ``(row index, message)`` problems as ``file:line``."""
    _reject(rows.path, [f"{rows.at(i)}: {why}" for i, why in problems], what)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (write a number, or null)")


def _parse(text: str) -> Any:
    return json.loads(text, parse_constant=_no_constant)


def _surrogate(value: Any) -> str | None:
    """The first string in ``value`` holding a lone surrogate, shortened; None when none does."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            return repr(value[max(exc.start - 10, 0) : exc.end + 10])
        return None
    items = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    for key, item in items:
        found = _surrogate(key) or _surrogate(item)
        if found:
            return found
    return None


def _read_line(raw: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """One line as a row, or the problem that stops it being one (``None, None``: blank).

    A problem at a known column starts with ``"<column>: "``, so that with the file and line
    it reads ``data.jsonl:12:7: ...``.
    """
    try:
        text = raw.decode("utf-8").removeprefix("\ufeff")  # a byte-order mark, as editors write
    except UnicodeDecodeError as exc:
        byte = raw[exc.start : exc.start + 1].hex()
        return None, f"{exc.start + 1}: byte 0x{byte} is not UTF-8; save the file as UTF-8"
    if not text.strip():
        return None, None
    try:
        row = _parse(text.rstrip("\r\n"))
    except json.JSONDecodeError as exc:
        return None, f"{exc.colno}: invalid JSON ({exc.msg}); expected one JSON object per line"
    except RecursionError:
        return None, "JSON nested too deeply to read; flatten the row"
    except ValueError as exc:  # NaN / Infinity, or an integer of more than 4,300 digits
        return None, f"invalid JSON: {exc}"
    if not isinstance(row, dict):
        return None, (
            f"found a JSON {type(row).__name__}; expected an object with prompt, response, "
            f"label and metadata"
        )
    if _SURROGATE_ESCAPE.search(text) and (bad := _surrogate(row)) is not None:
        return None, f"a lone UTF-16 surrogate in {bad}, which is not Unicode text; fix the writer"
    return row, None


def _ifeval_problem(row: Mapping[str, Any]) -> Problem | None:
    """IFEval's Hugging Face layout: the instruction columns at the top level and no label,
    which the ifeval grader reads from the label (it would find none and not apply)."""
    if "label" in row or not all(c in row for c in IFEVAL_COLUMNS):
        return None
    return Problem(
        "label",
        "is missing, but the row has IFEval's instruction columns instruction_id_list and "
        "kwargs at the top level (the Hugging Face layout)",
        "the ifeval grader reads them from the label: write each row's label as {\"instruction_"
        'id_list": [...], "kwargs": [...]}, e.g. jq -c \'.label = {instruction_id_list, kwargs} '
        "| del(.instruction_id_list, .kwargs)' in.jsonl > out.jsonl",
    )


def _job_output(path: Path, number: int, row: Mapping[str, Any]) -> DataError | None:
    """A row holding every column the job writes: its own ``rewards.jsonl`` read back, whose
    rewards would pass through unscored (or be refused for their ``status: ok``)."""
    if not all(c in row for c in OUTPUT_COLUMNS):
        return None
    return DataError(
        f"{path}:{number}: the row holds the columns a rewardrouter job writes "
        f"({', '.join(OUTPUT_COLUMNS)}): this file is a job's output (rewards.jsonl), not data "
        f"to score; pass the data file that job read: data.path=<the input JSONL>"
    )


def _parquet(path: Path, setting: str) -> DataError | None:
    """A Parquet file (by its first bytes or its name), which is read as JSONL only to fail on
    its first byte with a misleading 'not UTF-8'."""
    try:
        with path.open("rb") as handle:
            magic = handle.read(len(_PARQUET_MAGIC))
    except OSError:
        return None  # read_rows reports what stops it reading the file
    if magic != _PARQUET_MAGIC and path.suffix.lower() not in (".parquet", ".pq"):
        return None
    target = path.with_suffix(".jsonl")
    return DataError(
        f"{setting}: {path} is a Parquet file; rewardrouter reads JSONL only (one JSON object "
        f'per line). Convert it, then pass {setting}={target}: python -c "import pandas as pd; '
        f"pd.read_parquet('{path}').to_json('{target}', orient='records', lines=True, "
        f'force_ascii=False)"'
    )


def _empty_responses(rows: Rows, columns: Mapping[Any, str] | None) -> DataError | None:
    """``response`` empty on every row while a response-like column holds text: every reward
    would be a plausible 0.0 for the empty answer."""
    texts = [row["response"] for row in rows.rows if isinstance(row.get("response"), str)]
    if not texts or any(t.strip() for t in texts):
        return None
    taken = set((columns or {}).values())
    for column in RESPONSE_COLUMNS:
        holding = sum(
            1 for row in rows.rows if isinstance(row.get(column), str) and row[column].strip()
        )
        if holding and column not in taken:
            mapped = (columns or {}).get("response")
            read = f"column {mapped!r} (data.columns.response)" if mapped else "`response`"
            return DataError(
                f"{rows.path}: {read} is empty on every row ({len(texts)} rows), but column "
                f"{column!r} holds text on {holding}; every reward would grade an empty "
                f"answer. If {column!r} holds the model's answers, map it: "
                f"data.columns.response={column}"
            )
    return None


def _field(problem: Problem) -> str:
    return f"`{problem.path}` {problem.message}" + (f"; {problem.hint}" if problem.hint else "")


def _mapped_row_problems(row: dict[str, Any], columns: Mapping[Any, str] | None) -> list[Problem]:
    """Copy each mapped column of ``row`` under its field's name, then the row's problems.

    A mapped column the row lacks is a problem of its own, naming the mapping, the row's
    columns and what to do (a row scored without its label would get a plausible reward); the
    field's other checks, which would suggest a mapping of their own, are left out.
    """
    lacking: set[str] = set()
    problems: list[Problem] = []
    keys = [str(k) for k in row]
    for field, column in (columns or {}).items():
        if column in row:
            row[field] = row[column]
            continue
        if field == "response" and response_problem({**row, "response": None}) is None:
            continue  # an aborted row, or one carrying its reward, needs no response
        lacking.add(str(field))
        problem = absent_column(
            str(field),
            column,
            keys,
            f"data.columns.{field}",
            f"map `{field}` to the column that holds it: data.columns.{field}=<column>",
            holder="this row does",
            taken=set((columns or {}).values()),  # a column another field reads is no guess
        )
        if problem is not None:
            problems.append(problem)
    ifeval = _ifeval_problem(row) if "label" not in lacking else None
    found = [p for p in row_problems(row) if p.path not in lacking]
    return problems + ([ifeval] if ifeval is not None else []) + found


def read_rows(
    path: Path,
    limit: int | None = None,
    columns: Mapping[Any, str] | None = None,
    setting: str = "data.path",
) -> Rows:
    """Every JSON object line of ``path`` (blank lines skipped), up to ``limit`` rows.

    ``columns`` maps a field rewardrouter reads to the file's column holding it (``{"label":
    "solution"}``); the column's value is copied under the field's name. Raises
    :class:`DataError` listing every problem of the file, each as ``file:line:`` or ``file:line:column:``.
    """
    path = path.expanduser()  # a YAML's or a quoted override's `~/data.jsonl`
    if not path.is_file():
        what = "is a folder" if path.is_dir() else "file not found"
        how = f"{setting}=" if "." in setting else f"{setting} "
        raise DataError(f"{setting}: {what}: {path}; pass {how}<a JSONL file>")
    if (parquet := _parquet(path, setting)) is not None:
        raise parquet
    rows: list[dict[str, Any]] = []
    lines: list[int] = []
    problems: list[str] = []
    try:
        with path.open("rb") as handle:
            for number, raw in enumerate(handle, 1):
                row, problem = _read_line(raw)
                if row is not None and not rows and (output := _job_output(path, number, row)):
                    raise output
                if row is not None:
                    problem = "; ".join(map(_field, _mapped_row_problems(row, columns))) or None
                if problem is not None:
                    sep = ":" if problem[:1].isdigit() else ": "
                    problems.append(f"{path}:{number}{sep}{problem}")
                elif row is not None:
                    rows.append(row)
                    lines.append(number)
                    if limit is not None and len(rows) >= limit:
                        break
    except OSError as exc:
        raise DataError(f"{setting}: cannot read {path}: {exc.strerror or exc}") from None
    if problems:
        _reject(path, problems, "in its rows; nothing was scored")
    if not rows:
        raise DataError(
            f"{path}: no rows to score (the file is empty or blank); expected one JSON object "
            f"per line"
        )
    read = Rows(path, rows, lines)
    if (empty := _empty_responses(read, columns)) is not None:
        raise empty
    return read


def writable(path: Path, setting: str) -> None:
    """Raise :class:`DataError` unless ``path`` can be written: checked before anything is
    scored, so that the results of a long run are not lost at its end."""
    why = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        why = exc.strerror or str(exc)
    if why is None and path.is_dir():
        why = "it is a folder"
    elif why is None and not os.access(path if path.exists() else path.parent, os.W_OK):
        why = "permission denied"
    if why is not None:
        raise DataError(
            f"{setting}: cannot write {path}: {why}; pass {setting}=<a file in a folder you "
            f"can write>"
        )


def write_rows(path: Path, rows: Iterable[Mapping[str, Any]]) -> None:
    """One JSON object per line. Text that is not valid Unicode (a lone surrogate returned by
    a reward function) is written as its ``\\u`` escape, so the file stays valid JSONL."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", errors="backslashreplace") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
