"""Regenerate quickstart.json: the example run's scores with their provenance.

Run from the repository root, with the default model pulled:
    python tests/golden/regenerate.py
Do this only after a deliberate change of a prompt, the model or llama.cpp, and
say in the commit why the scores moved.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from localeval.prompts import load_prompt

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
PROMPTS = ["geval/score", "geval/steps"]


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        report_path = Path(scratch) / "report.json"
        subprocess.run(
            [sys.executable, "-m", "localeval", "run", "--config", str(ROOT / "examples/quickstart/eval.toml"),
             "--no-cache", "--report", str(report_path)],
            check=False, capture_output=True,
        )
        report = json.loads(report_path.read_text())
    golden = {
        "model_sha256": report["backend"]["model_sha256"],
        "runtime": report["backend"]["runtime"],
        "prompt_sha256": {name: load_prompt(name).sha256 for name in PROMPTS},
        "scores": {
            case["name"]: {r["metric"]: r["score"] for r in case["results"]} for case in report["cases"]
        },
    }
    (HERE / "quickstart.json").write_text(json.dumps(golden, indent=2) + "\n")


if __name__ == "__main__":
    main()
