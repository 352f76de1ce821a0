"""What a command readies before its first judge call: the dataset, the cache folder, the executor."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from localeval.backends.options import BackendOptions
from localeval.config import CacheConfig, RunConfig
from localeval.data.dataset import Dataset
from localeval.errors import ConfigError, InputError
from localeval.files import make_folder
from localeval.paths import Paths
from localeval.run.ray_executor import JudgeRecipe, RayExecutor


def load_dataset(config: RunConfig) -> tuple[Path, Dataset]:
    """The configured dataset file and its cases; a file without cases is an error, not a pass."""
    path = config.dataset.path
    if path is None:
        raise ConfigError("no dataset given (a file argument, or [dataset] path in --config)")
    dataset = Dataset.load(
        path,
        format=config.dataset.format,
        fields=config.dataset.fields,
        list_delimiter=config.dataset.list_delimiter,
        unknown_fields=config.dataset.unknown_fields,
    )
    dataset.require_cases(config.dataset.format)
    return path, dataset


def make_cache_folder(cache: CacheConfig, paths: Paths, judged: bool) -> None:
    """Make the judge's cache folder before the judge loads, so that a bad path is one line, not a traceback."""
    if judged and cache.enabled:
        try:
            make_folder(cache.dir or paths.cache, "the cache folder")
        except InputError as err:  # the way on without a writable cache: say it
            raise InputError(f"{err}; run with --no-cache, or give a writable --cache-dir") from err


def ray_executor(config: RunConfig, tables: Mapping[str | None, BackendOptions], address: str | None,
                 workers: int | None) -> RayExecutor:
    """The Ray executor of a run: its workers load the judges from the same tables as the driver."""
    base = Path.cwd() if config.source == "<command line>" else Path(config.source).parent
    recipe = JudgeRecipe(tables, config.cache, tuple(config.plugins), base)
    return RayExecutor(recipe, address=address, workers=workers)
