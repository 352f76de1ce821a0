"""A server's URL: how it is recorded, and how a request's URL is made from it.

A URL may carry secrets: a password in its userinfo (or a token as the user name), a
key in its query (``http://judge:PASSWORD@host/v1?api_key=KEY``). They go to the server
with every request and are recorded nowhere. :func:`redacted` is the one way a URL
becomes text that something keeps or shows (a message, a fingerprint and so a cache
key, a report, a journal, the terminal): its userinfo and every query value masked,
the rest as written, so two servers still differ by scheme, host, port, path and the
names of their query parameters. :data:`RecordedUrl` is the type of a URL option of a
backend's table: in memory the URL as given, dumped as JSON (a config in a journal or
a report) redacted.

:func:`joined` makes a request's URL: the request's path after the base URL's path,
before its query, so a key in the query reaches every request and is never read as
part of the path.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated
from urllib.parse import SplitResult, unquote, urlsplit, urlunsplit

from pydantic import PlainSerializer

#: What a secret is replaced by.
MASK = "***"
#: The shortest user name or query value masked in messages: a token or a key is longer,
#: and masking a short value (``v=1``) everywhere would garble every message.
SHORTEST_SECRET = 8


def redacted(url: str) -> str:
    """``url`` as it may be recorded: userinfo as ``***@``, each query value as ``***``, no fragment.

    The host is lowercased and the port as a number where they parse (a port that does not is
    kept as written); a URL without a scheme (``host:11434``, as Ollama takes it) stays without.
    Redacting a redacted URL changes nothing.
    """
    parts, schemeless = _split(url)
    userinfo = MASK + "@" if "@" in parts.netloc else ""
    query = "&".join(_masked(item) for item in parts.query.split("&") if item)
    return _unsplit(parts._replace(netloc=userinfo + _host(parts), query=query, fragment=""), schemeless)


def url_problem(url: str) -> str | None:
    """What makes ``url`` no server's address (a scheme other than http(s), no host, a port that
    is no number), said without the URL itself, which may hold a secret; None when it is one."""
    parts, schemeless = _split(url)
    if not schemeless and parts.scheme not in ("http", "https"):
        return f"a server's URL starts with http:// or https://, not {parts.scheme or 'nothing'}:"
    try:
        parts.port  # noqa: B018 -- parsing it is the check
    except ValueError:
        return "its port is not a number from 0 to 65535"
    if not parts.hostname:
        return "it names no host"
    return None


def secrets(url: str) -> tuple[str, ...]:
    """What a message about ``url`` must mask: its password (as written and decoded), its user
    name when there is no password (a token) and its query values, these two when at least
    :data:`SHORTEST_SECRET` characters long."""
    parts, _ = _split(url)
    found: list[str] = []
    if parts.password is not None:
        found += [parts.password, unquote(parts.password)]
    elif parts.username and len(unquote(parts.username)) >= SHORTEST_SECRET:
        found += [parts.username, unquote(parts.username)]
    for item in parts.query.split("&"):
        value = item.partition("=")[2] if "=" in item else item
        if len(unquote(value)) >= SHORTEST_SECRET:
            found += [value, unquote(value)]
    return tuple(dict.fromkeys(s for s in found if s))


def hides(recorded: str) -> bool:
    """Whether ``recorded`` is a URL :func:`redacted` masked something of (userinfo, a query value)."""
    if MASK not in recorded or any(c.isspace() for c in recorded):  # not a URL: the text of a prompt, say
        return False
    parts, _ = _split(recorded)
    masked_query = any(item == MASK or item.endswith("=" + MASK) for item in parts.query.split("&"))
    return parts.netloc.startswith(MASK + "@") or masked_query


def unmasked(recorded: str, originals: Iterable[str]) -> str | None:
    """The one of ``originals`` that ``recorded`` is the redaction of; None when none is, or several
    different ones are."""
    found = {url for url in originals if url != recorded and redacted(url) == recorded}
    return found.pop() if len(found) == 1 else None


def joined(base: str, path: str) -> str:
    """The URL of ``path`` on the server at ``base``: ``base``'s path, then ``path``, then the
    query (``base``'s, then any of ``path``'s); an absolute ``path`` (``http://…``) as it is."""
    if "://" in path:
        return path
    parts = urlsplit(base)
    own, _, query = path.partition("?")
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + own, query=_and(parts.query, query), fragment=""))


def rooted(base: str, path: str) -> str:
    """The URL of ``path`` from the root of the server at ``base`` (``/props`` beside ``/v1``),
    with ``base``'s userinfo and query: what the server asks of every request."""
    return urlunsplit(urlsplit(base)._replace(path=path, fragment=""))


#: A URL option of a backend's table: the URL as given in memory, :func:`redacted` when dumped as
#: JSON (the config a journal or a report records). A plugin's backend takes its URLs with it too.
RecordedUrl = Annotated[str, PlainSerializer(redacted, when_used="json")]


def _split(url: str) -> tuple[SplitResult, bool]:
    """``url``'s parts, and whether it has no scheme (then read as ``//url``: host first)."""
    schemeless = "://" not in url and not url.startswith("//")
    return urlsplit("//" + url if schemeless else url), schemeless


def _unsplit(parts: SplitResult, schemeless: bool) -> str:
    text = urlunsplit(parts)
    return text.removeprefix("//") if schemeless else text


def _host(parts: SplitResult) -> str:
    """Host and port as a fingerprint has always shown them: the host lowercased, the port a number."""
    try:
        port = parts.port
    except ValueError:  # not a port number: kept as written, the host still lowercased
        return parts.netloc.rpartition("@")[2].lower()
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    return f"{host}:{port}" if port else host


def _masked(item: str) -> str:
    """One ``name=value`` of a query with the value masked; a bare item (it may be a key) masked whole."""
    name, equals, _ = item.partition("=")
    return f"{name}={MASK}" if equals else MASK


def _and(first: str, second: str) -> str:
    return "&".join(query for query in (first, second) if query)

