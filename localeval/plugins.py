"""Importing the user's metric modules, so that their ``@metric`` functions and classes register.

A plugin is a Python file (``my_metrics.py``, relative to the config file that
names it) or an importable module (``mypackage.metrics``). Importing runs the
user's code: only what the config or the command line names is imported.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from localeval.errors import ConfigError


def load_plugins(plugins: Sequence[str], base: Path, where: str) -> list[ModuleType]:
    """Import each plugin; errors name ``where`` (e.g. 'eval.toml: plugins[1]') and the cause."""
    modules = []
    for i, plugin in enumerate(plugins, start=1):
        try:
            modules.append(_import(plugin, base))
        except ConfigError as err:
            raise ConfigError(f"{where}[{i}] {plugin!r}: {err}") from err
        except Exception as err:  # the user's module failed to import: say how
            raise ConfigError(f"{where}[{i}] {plugin!r}: {type(err).__name__}: {err}") from err
    return modules


def _import(plugin: str, base: Path) -> ModuleType:
    if not plugin.endswith(".py"):
        return importlib.import_module(plugin)
    path = Path(plugin) if Path(plugin).is_absolute() else base / plugin
    if not path.is_file():
        raise ConfigError(f"no such file: {path}")
    path = path.resolve()
    name = f"localeval_plugin_{path.stem}_{hashlib.sha256(str(path).encode()).hexdigest()[:8]}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # before running it: dataclasses and pydantic look it up
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
