"""Every shipped YAML composes, validates against the models and the JSON Schema; the schema is
fresh; a wheel built from a clean tree carries every YAML."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import jsonschema
import pytest
from hydra import compose, initialize_config_dir

from rewardrouter import compile_router
from rewardrouter.cli.paths import conf_dir
from rewardrouter.config import JobConfig, to_container, validate
from rewardrouter.schema import render_all

pytestmark = pytest.mark.slow  # a long file: `make test` starts it first

ROOT = Path(__file__).resolve().parents[2]
YAMLS = sorted(p for p in (ROOT / "conf").rglob("*.yaml")) + sorted(
    (ROOT / "examples").rglob("*.yaml")
)
ROUTERS = sorted(p.stem for p in (ROOT / "conf" / "router").glob("*.yaml"))
MODELINE = re.compile(r"^# yaml-language-server: \$schema=(\S+)$", re.M)


@pytest.mark.parametrize("router", ROUTERS)
def test_every_router_option_composes_validates_and_compiles(router: str) -> None:
    with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
        cfg = compose("config", overrides=[f"router={router}"])
    job = validate(to_container(cfg), JobConfig)
    with compile_router(job.router()) as compiled:
        assert compiled.routes


@pytest.mark.parametrize("path", YAMLS, ids=lambda p: str(p.relative_to(ROOT)))
def test_yaml_has_modeline_and_matches_its_schema(path: Path) -> None:
    text = path.read_text()
    found = MODELINE.search(text)
    assert found, f"{path.name}: add `# yaml-language-server: $schema=...` as a header line"
    schema_path = (path.parent / found.group(1)).resolve()
    assert schema_path.is_file(), f"{path.name}: modeline points to missing {schema_path}"
    import yaml

    document = yaml.safe_load(text) or {}
    validator = jsonschema.Draft202012Validator(json.loads(schema_path.read_text()))
    errors = [f"{e.json_path}: {e.message}" for e in validator.iter_errors(document)]
    assert not errors


@pytest.mark.parametrize(
    ("term", "message"),
    [
        pytest.param(
            {"kind": "remote", "kwargs": {"url": "http://127.0.0.1:1/r", "retrys": 3}},
            "Additional properties are not allowed ('retrys' was unexpected)",
            id="typo",
        ),
        pytest.param({"kind": "remote", "kwargs": {}}, "'url' is a required property", id="no_url"),
        pytest.param(
            {"kind": "remote", "kwargs": {"url": "http://127.0.0.1:1/r", "concurrency": 0}},
            "0 is less than the minimum of 1",
            id="range",
        ),
    ],
)
def test_schema_describes_the_settings_of_a_remote_term(
    term: dict[str, object], message: str
) -> None:
    schema = json.loads((ROOT / "schemas" / "router.schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    document = {"routes": {"judged": {"rewards": {"judge": term}}}}
    assert [e.message for e in validator.iter_errors(document)] == [message]
    # The same kwargs on a plain function are that function's business, not the schema's.
    plain = {"routes": {"judged": {"rewards": {"judge": {**term, "kind": "math"}}}}}
    assert not list(validator.iter_errors(plain))


def test_schema_files_are_fresh() -> None:
    for name, text in render_all().items():
        committed = (ROOT / "schemas" / name).read_text()
        assert committed == text, f"schemas/{name} is stale: run `make schema`"


def _tracked_files() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return [line for line in listed.stdout.splitlines() if (ROOT / line).is_file()]


def test_wheel_from_clean_tree_contains_every_yaml(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    for name in _tracked_files():
        target = tree / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "build",
            "--wheel",
            "--no-isolation",
            "--outdir",
            str(tmp_path / "dist"),
        ],
        cwd=tree,
        check=True,
        capture_output=True,
    )
    [wheel] = (tmp_path / "dist").glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for yaml_file in (tree / "conf").rglob("*.yaml"):
        assert f"rewardrouter/conf/{yaml_file.relative_to(tree / 'conf')}" in names
    for data in (tree / "examples" / "data").glob("*.jsonl"):
        assert f"rewardrouter/example_data/{data.name}" in names
    assert "rewardrouter/py.typed" in names
    # The job runs from the unpacked wheel alone, in another folder, on its own conf and data.
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    work = tmp_path / "elsewhere"
    work.mkdir()
    code = (
        "import sys; from rewardrouter.cli.main import main; sys.argv[0] = 'rewardrouter'; main()"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "router=mixed", "output.path=out.jsonl"],
        cwd=work,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(site)},
    )
    assert done.returncode == 0, done.stderr
    assert str(site / "rewardrouter" / "example_data" / "mixed.jsonl") in done.stdout.replace(
        "\n", ""
    )
    assert len((work / "out.jsonl").read_text().splitlines()) == 36
