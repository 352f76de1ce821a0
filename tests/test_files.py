"""localeval.files: one atomic writer for datasets, reports, meta-eval output and the model registry."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from localeval.files import write_text_atomically


def test_replacing_keeps_the_mode_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    target.write_text("old")
    os.chmod(target, 0o600)
    write_text_atomically(target, "new ✓")
    assert target.read_text(encoding="utf-8") == "new ✓"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_a_new_file_is_world_readable(tmp_path: Path) -> None:
    target = tmp_path / "new.json"
    write_text_atomically(target, "x")
    assert stat.S_IMODE(target.stat().st_mode) == 0o644


def test_a_failed_write_keeps_the_old_file_and_cleans_up(tmp_path: Path) -> None:
    target = tmp_path / "data.jsonl"
    target.write_text("old")
    with pytest.raises(UnicodeEncodeError):
        write_text_atomically(target, "\ud800")  # a lone surrogate cannot be encoded
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["data.jsonl"]
