"""Secrets in a server's URL never reach a file (issue 25, item 1).

A password in a base URL (``http://judge:PASSWORD@host/v1``) and a key in its query
(``…/v1?api_key=KEY``) are sent to the server on every request (basic auth, the query
after each request's path) and recorded nowhere: not in the journal, the reports (JSON,
HTML, JUnit, JSONL), the cache folder, the fingerprints, the errors, the terminal.

* Pure: how a URL is recorded (:func:`localeval.backends.urls.redacted`) and how a request's
  URL is made from a base URL (:func:`~localeval.backends.urls.joined`).
* Scripted servers on 127.0.0.1 (real HTTP, in threads) that demand both secrets and echo
  the path they were asked for in their errors: a run with a judge fleet and a target,
  every file it writes grepped, its resume, and ``backends check``.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import httpx
import pytest
from command_line import Project
from servers import STOP_POLL, JsonHandler, completion, legacy_completion

from localeval.backends.http import HttpClient, HttpOptions, HttpStatusError
from localeval.backends.ollama import OllamaClient
from localeval.backends.urls import joined, redacted, rooted, secrets
from localeval.config import RunConfig
from localeval.errors import InputError
from localeval.run.journal_config import with_secrets

PASSWORD = "pw-a81f3c6e5d"  # the secrets the servers below demand
KEY = "sk-q-5b2e9d7c4a"
#: What may never be in a file or on the terminal: each secret, and the forms a URL gives it.
LEAKS = [PASSWORD, KEY, quote(PASSWORD), quote(KEY), base64.b64encode(f"judge:{PASSWORD}".encode()).decode()]


# -- pure: recording a URL, making a request's URL ---------------------------------------------------


@pytest.mark.parametrize(("url", "shown"), [
    ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1"),
    ("http://judge:pw@Judge.Local:8080/v1", "http://***@judge.local:8080/v1"),
    ("https://ghp_token@host/v1", "https://***@host/v1"),
    ("http://h/v1?api_key=k&api-version=2024-02-01", "http://h/v1?api_key=***&api-version=***"),
    ("http://u:p%40ss@[::1]:9/v1?key=k#frag", "http://***@[::1]:9/v1?key=***"),
    ("127.0.0.1:11434", "127.0.0.1:11434"),
    ("judge:pw@127.0.0.1:11434", "***@127.0.0.1:11434"),
    ("http://h:99999/v1?k=v", "http://h:99999/v1?k=***"),  # a port no parser takes: kept as written
])
def test_a_url_is_recorded_with_its_userinfo_and_query_values_masked(url: str, shown: str) -> None:
    assert redacted(url) == shown
    assert redacted(shown) == shown  # recording twice changes nothing


@pytest.mark.parametrize(("base", "path", "url"), [
    ("http://h/v1", "/models", "http://h/v1/models"),
    ("http://h/v1/", "/models", "http://h/v1/models"),
    ("http://u:p@h/v1?api_key=k", "/chat/completions", "http://u:p@h/v1/chat/completions?api_key=k"),
    ("http://h/v1?api_key=k", "http://other/x", "http://other/x"),  # an absolute URL is itself
])
def test_a_request_path_goes_before_the_query(base: str, path: str, url: str) -> None:
    assert joined(base, path) == url


def test_a_path_from_the_root_keeps_the_userinfo_and_the_query() -> None:
    assert rooted("http://u:p@h:8/v1?api_key=k", "/props") == "http://u:p@h:8/props?api_key=k"


def test_the_secrets_of_a_url_are_its_password_a_lone_user_and_long_query_values() -> None:
    assert secrets("http://judge:p%40ss@h/v1?api_key=sk-12345678&v=1") == ("p%40ss", "p@ss", "sk-12345678")
    assert secrets("https://ghp_token@h/v1") == ("ghp_token",)
    assert secrets("http://h/v1") == ()


def test_a_key_in_the_query_reaches_every_request_after_its_path() -> None:
    seen: list[httpx.URL] = []

    def server(request: httpx.Request) -> httpx.Response:
        seen.append(request.url)
        if request.url.path == "/v1/models":
            return httpx.Response(200, json={"data": []})
        return httpx.Response(404, text=f"no route {request.url.raw_path.decode()}")

    client = HttpClient(f"http://judge:{PASSWORD}@h/v1?api_key={KEY}", transport=httpx.MockTransport(server),
                        options=HttpOptions(max_attempts=1))
    client.get("/models")
    with pytest.raises(HttpStatusError) as info:
        client.get("/nowhere")
    assert [(u.path, u.params.get("api_key")) for u in seen] == [("/v1/models", KEY), ("/v1/nowhere", KEY)]
    assert str(info.value) == ("http://***@h/v1/nowhere?api_key=*** answered HTTP 404: "
                               "'no route /v1/nowhere?api_key=***'")


def test_ollama_sends_the_query_of_its_host_with_every_request() -> None:
    seen: list[httpx.URL] = []

    def server(request: httpx.Request) -> httpx.Response:
        seen.append(request.url)
        return httpx.Response(500, text=f"broken at {request.url.raw_path.decode()}")

    client = OllamaClient(f"http://judge:{PASSWORD}@h:11434?api_key={KEY}", HttpOptions(max_attempts=1),
                          transport=httpx.MockTransport(server))
    with pytest.raises(HttpStatusError) as info:
        client.call("/api/tags", lambda ollama: ollama.list())
    assert [(u.path, u.params.get("api_key")) for u in seen] == [("/api/tags", KEY)]
    assert str(info.value) == ("http://***@h:11434/api/tags?api_key=*** answered HTTP 500: "
                               "'broken at /api/tags?api_key=***'")


def test_a_config_dump_masks_every_server_url_and_keeps_the_rest() -> None:
    url = f"http://judge:{PASSWORD}@127.0.0.1:9/v1?api_key={KEY}"
    config = RunConfig.model_validate({
        "backend": {"kind": "vllm", "base_url": [url, "http://127.0.0.1:10/v1"]},
        "judges": {"small": {"kind": "ollama", "model": "m", "base_url": url}},
        "target": {"backend": {"kind": "llama-cpp-python", "base_url": url}},
    })
    dumped = config.model_dump(mode="json")
    assert not any(leak in json.dumps(dumped) for leak in LEAKS)
    assert dumped["backend"]["base_url"] == ["http://***@127.0.0.1:9/v1?api_key=***", "http://127.0.0.1:10/v1"]
    assert dumped["judges"]["small"]["base_url"] == "http://***@127.0.0.1:9/v1?api_key=***"
    assert dumped["target"]["backend"]["base_url"] == "http://***@127.0.0.1:9/v1?api_key=***"
    assert config.model_dump()["backend"]["base_url"][0] == url  # in memory, the URL as given


def test_a_journal_config_gets_each_secret_from_the_same_place_in_the_config_file(tmp_path: Path) -> None:
    first, second = "http://judge:one-1234@h:8/v1", "http://judge:two-5678@h:8/v1"  # one redaction, two secrets
    source = tmp_path / "eval.toml"
    source.write_text(f'[backend]\nbase_url = "{first}"\n[judges.small]\nbase_url = ["{second}", "http://x/v1"]\n')
    recorded = {"backend": {"base_url": redacted(first)},
                "judges": {"small": {"base_url": [redacted(second), "http://x/v1"]}},
                "metrics": [{"criteria": "Rate it *** out of 5: http://***@h?k=***"}]}  # a prompt's text stays as it is
    journal = tmp_path / "journal.jsonl"
    assert with_secrets(recorded, str(source), journal) == {
        "backend": {"base_url": first}, "judges": {"small": {"base_url": [second, "http://x/v1"]}},
        "metrics": recorded["metrics"]}
    plain = {"backend": {"base_url": "http://h:8/v1"}}
    assert with_secrets(plain, str(tmp_path / "gone.toml"), journal) is plain  # no secret: no file read
    with pytest.raises(InputError) as info:
        with_secrets(recorded, "<command line>", journal)
    assert str(info.value) == (f"{journal}:1: backend.base_url: http://***@h:8/v1: the journal keeps no secret of a "
                               "URL, and it was given on the command line; start a new run")
    with pytest.raises(InputError, match=r"its config file .*gone.toml cannot be read again \(No such file"):
        with_secrets(recorded, str(tmp_path / "gone.toml"), journal)


# -- servers that demand the secrets -----------------------------------------------------------------


class Guarded:
    """llama-cpp-python's server, scripted in a thread on 127.0.0.1, that demands the secrets of
    :attr:`url` on every request (basic auth, ``api_key`` in the query) and quotes the path it was
    asked for, query included, in every error. A prompt holding ``JUDGE-FAIL`` (a score) or
    ``TARGET-FAIL`` (a target's output) is answered HTTP 400."""

    def __init__(self) -> None:
        self.asked: list[str] = []  #: the path of every request, query included
        self.refused = 0  #: requests without the secrets
        self._lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), type("Handler", (_GuardedHandler,), {"owner": self}))
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs=STOP_POLL, daemon=True)
        self.thread.start()
        self.url = f"http://judge:{PASSWORD}@127.0.0.1:{self.httpd.server_address[1]}/v1?api_key={KEY}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()

    def answer(self, method: str, path: str, authorization: str, body: dict[str, Any] | None) -> tuple[int, Any]:
        with self._lock:
            self.asked.append(path)
        parts = urlsplit(path)
        expected = "Basic " + base64.b64encode(f"judge:{PASSWORD}".encode()).decode()
        if authorization != expected or parse_qs(parts.query).get("api_key") != [KEY]:
            with self._lock:
                self.refused += 1
            return 401, {"error": {"message": f"who are you? you asked for {path}"}}
        if method == "GET":
            if parts.path == "/v1/models":
                return 200, {"data": [{"id": "smollm2", "owned_by": "me"}]}
            return 404, {"detail": f"Not Found: {path}"}
        assert body is not None
        if parts.path == "/v1/completions":  # the logprob probe, a score, or a score's continuation
            if "Reply with OK." in body["prompt"]:
                return 200, legacy_completion("OK", {"OK": -0.1}).json()
            if "JUDGE-FAIL" in body["prompt"]:
                return 400, {"error": {"message": f"cannot judge this at {path}"}}
            if body["prompt"][-1:].isdigit():
                return 200, legacy_completion("\n", {"\n": 0.0}).json()
            return 200, legacy_completion("4", {"4": -0.5, "3": -1.0}).json()
        if parts.path == "/v1/chat/completions":  # a target's output, or `backends check`'s JSON probe
            question = body["messages"][-1]["content"]
            if "TARGET-FAIL" in question:
                return 400, {"error": {"message": f"cannot answer this at {path}"}}
            if "response_format" in body:
                return 200, completion('{"true": true}').json()
            return 200, completion(f"An answer to {question}").json()
        return 404, {"detail": f"Not Found: {path}"}


class _GuardedHandler(JsonHandler):
    owner: Guarded

    def do_GET(self) -> None:
        self._send(*self.owner.answer("GET", self.path, self.headers.get("Authorization", ""), None))

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self._send(*self.owner.answer("POST", self.path, self.headers.get("Authorization", ""), body))


@pytest.fixture
def guarded() -> Iterator[tuple[Guarded, Guarded]]:
    pair = Guarded(), Guarded()
    yield pair
    for server in pair:
        server.close()


GOLDENS = ["What is 2 + 2?", "JUDGE-FAIL: what is 3 + 3?", "TARGET-FAIL: what is 4 + 4?", "What is 5 + 5?"]


def config(judges: list[str], target: str) -> str:
    """A run of G-Eval by a fleet of ``judges`` on the outputs of ``target``."""
    return ("[dataset]\npath = \"goldens.jsonl\"\n"
            f"[backend]\nkind = \"llama-cpp-python\"\nbase_url = {json.dumps(judges)}\nmax_attempts = 1\n"
            "[target]\nname = \"echo\"\n"
            f"[target.backend]\nkind = \"llama-cpp-python\"\nbase_url = {json.dumps(target)}\nmax_attempts = 1\n"
            "[[metrics]]\nmetric = \"geval\"\ncriteria = \"The sum is right.\"\ninclude_reason = false\n"
            "evaluation_steps = [\"Check the sum.\"]\nevaluation_params = [\"input\", \"actual_output\"]\n")


@pytest.fixture
def secret_project(project: Project, guarded: tuple[Guarded, Guarded]) -> Project:
    project.write("goldens.jsonl", "".join(json.dumps({"input": q}) + "\n" for q in GOLDENS))
    project.write("eval.toml", config([server.url for server in guarded], guarded[0].url))
    return project


def leaks(folder: Path, *texts: str) -> list[str]:
    """Every file under ``folder`` but the user's config, and ``texts``, that holds a secret."""
    found = [f"{path}: {leak}" for path in sorted(folder.rglob("*")) if path.is_file() and path.name != "eval.toml"
             for leak in LEAKS if leak.encode() in path.read_bytes()]
    return found + [f"output: {leak}" for text in texts for leak in LEAKS if leak in text]


def test_a_run_through_servers_demanding_secrets_writes_none_of_them(
        secret_project: Project, guarded: tuple[Guarded, Guarded]) -> None:
    project = secret_project
    done = project.localeval("run", "-c", "eval.toml", "--run-dir", "run", "--html", "copy.html",
                             "--junit", "copy.xml")
    assert done.returncode == 3, done.stderr  # the two failures are errors of their cases
    assert sum(server.refused for server in guarded) == 0  # every request carried both secrets
    asked = [path for server in guarded for path in server.asked]
    assert {urlsplit(p).path for p in asked} >= {"/v1/models", "/v1/completions", "/v1/chat/completions"}
    report = json.loads((project / "run" / "report.json").read_text())
    errors = [r["error"] for case in report["cases"] for r in case["results"] if r["error"]]
    assert len(errors) == 2 and all("?api_key=***" in error for error in errors), errors  # the servers' echo, masked
    written = {p.name for p in (project / "run").iterdir()}
    assert {"journal.jsonl", "report.json", "report.html", "junit.xml", "cases.jsonl"} <= written
    assert any((project / "cache").rglob("*"))  # the cache was written, and is grepped too
    assert leaks(project.path, done.stdout, done.stderr) == []
    # what the files say instead: where the judge is, its secrets masked
    journal = json.loads((project / "run" / "journal.jsonl").read_text().splitlines()[0])
    masked = [redacted(server.url) for server in guarded]
    assert journal["config"]["backend"]["base_url"] == masked
    assert report["config"]["target"]["backend"]["base_url"] == masked[0]
    assert report["backend"]["settings"]["endpoints"] == sorted(masked)  # no model file hash: the fleet's addresses
    assert "chat markup" in report["trust"][0]["markup"]  # a server judge: the report says case text may act as markup
    assert "case text may act as chat markup" in done.stderr


def test_a_run_resumes_with_the_secrets_of_its_config_file(
        secret_project: Project, guarded: tuple[Guarded, Guarded]) -> None:
    project = secret_project
    first = project.localeval("run", "-c", "eval.toml", "--run-dir", "run", "--no-cache")
    assert first.returncode == 3, first.stderr
    journal = project / "run" / "journal.jsonl"
    lines = journal.read_text().splitlines(keepends=True)
    scored = [n for n, line in enumerate(lines) if '"result":' in line and json.loads(line)["result"]["error"] is None]
    journal.write_text("".join(line for n, line in enumerate(lines) if n not in scored[1:]))  # one score kept
    for report in ("report.json", "report.html", "junit.xml", "cases.jsonl"):
        (project / "run" / report).unlink()
    refused = [server.refused for server in guarded]
    resumed = project.localeval("run", "--resume", "run")
    assert resumed.returncode == 3, resumed.stderr
    assert [server.refused for server in guarded] == refused  # the resume sent the secrets too
    assert json.loads((project / "run" / "report.json").read_text())["stats"]["resumed"] == 1
    assert leaks(project.path, resumed.stdout, resumed.stderr) == []


def test_a_resume_whose_config_no_longer_holds_the_secret_is_one_line(
        secret_project: Project, guarded: tuple[Guarded, Guarded]) -> None:
    project = secret_project
    first = project.localeval("run", "-c", "eval.toml", "--run-dir", "run", "--no-cache")
    assert first.returncode == 3, first.stderr
    (project / "eval.toml").write_text(config([guarded[1].url], guarded[1].url))
    (project / "run" / "report.json").unlink()
    resumed = project.localeval("run", "--resume", "run")
    assert resumed.returncode == 2
    masked = redacted(guarded[0].url)
    assert resumed.stderr.strip() == (
        f"error: run/journal.jsonl:1: backend.base_url.0: {masked}: the journal keeps no "
        f"secret of a URL, and {project / 'eval.toml'} no longer holds this one; start a new run"
    )


def test_backends_check_shows_the_servers_with_their_secrets_masked(
        secret_project: Project, guarded: tuple[Guarded, Guarded]) -> None:
    done = secret_project.localeval("backends", "check", "-c", "eval.toml")
    assert done.returncode == 0, done.stderr
    assert redacted(guarded[0].url) in done.stdout
    assert leaks(secret_project.path, done.stdout, done.stderr) == []
