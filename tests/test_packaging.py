"""The wheel carries the top-level prompts/ and models/ folders and the judge check's data, so a non-editable install works."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_wheel_ships_prompts_and_the_model_manifest(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(tmp_path), str(ROOT)],
        check=True, capture_output=True,
    )
    (wheel,) = tmp_path.glob("localeval-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped_prompts = {f"localeval/_data/prompts/{p.relative_to(ROOT / 'prompts')}" for p in (ROOT / "prompts").rglob("*.txt")}
    assert shipped_prompts and shipped_prompts <= names
    assert "localeval/_data/models/manifest.toml" in names
    excerpts = {f"localeval/_data/tests/data/alignment/{p.name}" for p in (ROOT / "tests" / "data" / "alignment").iterdir()}
    assert "localeval/_data/tests/data/alignment/LICENSE-UniEval-MIT.txt" in excerpts <= names  # the check's human sets
    assert "localeval/metaeval/pairs/correctness.jsonl" in names  # its planted pairs
    assert "localeval/cli/app.py" in names
    entry_points = zipfile.ZipFile(wheel).read(
        next(n for n in names if n.endswith("entry_points.txt"))
    ).decode()
    assert "localeval = localeval.cli:main" in entry_points
