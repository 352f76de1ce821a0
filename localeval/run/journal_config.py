"""The config a journal records, read back: the secrets of its server URLs come from the config file.

A journal's header records the run's config as JSON, and a server's URL there is
:func:`~localeval.backends.urls.redacted` (:data:`~localeval.backends.urls.RecordedUrl`):
``http://***@host/v1?api_key=***``. A resume needs the URL whole; it is where the user put
it, in the config file the run started from (the header's ``config_source``). Each masked
URL is replaced by the file's URL that it is the redaction of: the one at the same place
(``backend.base_url``) first, else the only one anywhere in the file. The file may have
changed since (a rotated key is then the new one); a URL it no longer holds, or one that
was given on the command line, is an error naming it: nothing else knows the secret.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from localeval.backends.urls import hides, unmasked
from localeval.errors import InputError

COMMAND_LINE = "<command line>"


def with_secrets(config: dict[str, Any], source: str, journal: Path) -> dict[str, Any]:
    """``config`` (a journal's) with every masked URL replaced by the one ``source`` (the config
    file) holds; :class:`InputError` naming the URL when the file holds none."""
    if not any(hides(text) for text in _strings(config)):
        return config
    original = _read(source, journal) if source != COMMAND_LINE else {}
    everywhere = list(_strings(original))

    def restore(recorded: str, where: str, here: Any) -> str:
        found = (unmasked(recorded, [here]) if isinstance(here, str) else None) or unmasked(recorded, everywhere)
        if found is None:
            holder = ("it was given on the command line" if source == COMMAND_LINE
                      else f"{source} no longer holds this one")
            raise InputError(f"{journal}:1: {where}: {recorded}: the journal keeps no secret of a URL, and "
                             f"{holder}; start a new run")
        return found

    restored: dict[str, Any] = _mapped(config, original, "", restore)
    return restored


def _mapped(value: Any, original: Any, where: str, restore: Callable[[str, str, Any], str]) -> Any:
    """``value`` with each masked URL string ``restore``d (given its place and the file's value there)."""
    if isinstance(value, dict):
        return {key: _mapped(item, original.get(key) if isinstance(original, dict) else None,
                             f"{where}.{key}" if where else str(key), restore) for key, item in value.items()}
    if isinstance(value, list):
        return [_mapped(item, original[n] if isinstance(original, list) and n < len(original) else None,
                        f"{where}.{n}", restore) for n, item in enumerate(value)]
    if isinstance(value, str) and hides(value):
        return restore(value, where, original)
    return value


def _strings(value: Any) -> Iterator[str]:
    """Every string in a JSON or TOML value, at any depth."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _read(source: str, journal: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(Path(source).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError) as err:
        reason = err.strerror if isinstance(err, OSError) else "not valid TOML"
        raise InputError(f"{journal}:1: the journal keeps no secret of the run's server URLs, and its config "
                         f"file {source} cannot be read again ({reason}); start a new run") from err
