"""A loopback stand-in for the Ollama server: Ollama's HTTP API on llama-cpp-python. Tests only.

The real server cannot run on the test machines (it is in neither Debian nor PyPI), so the
Ollama backend is tested against this. It speaks the API as the official
``ollama`` Python client (0.6.3) reads it, and the tests check it with that
client.

Served: ``POST /api/chat`` and ``/api/generate`` (non-streaming, and NDJSON
streaming with one chunk per token), ``GET /api/tags``, ``POST /api/show``,
``GET /api/version``; errors as ``{"error": "..."}`` with the status (404 for
an unknown model or route, 400 for a bad request).

Fidelity limits — where it is not Ollama:

* One model, loaded at start. ``num_ctx`` is fixed at load (the option is
  accepted and ignored); there is no loading, unloading or ``keep_alive``.
* The prompt is rendered with the GGUF's own Jinja chat template (Ollama uses
  the Go template of the model's Modelfile; for a ChatML model both give the
  same text). A final assistant message is continued, as Ollama's templates do.
* ``format``: a JSON Schema becomes a grammar through llama-cpp-python's
  converter, ``"json"`` its JSON grammar; Ollama has its own converter, which
  may accept a different subset of JSON Schema.
* Log-probabilities are llama.cpp's, from the raw logits (as Ollama's are; a
  temperature does not change them), each of the top alternatives a token of its
  own (as Ollama lists them). A position where an end-of-generation token is
  drawn gets none, as in Ollama (its runner checks for the end before computing
  them). A request that adds one token to the previous one is read as that one
  token on top of the kept KV cells, as Ollama (and llama-cpp-python's server)
  read it: a continuation asked for right after its parent. Otherwise only whole
  64-token batches of the shared prefix are kept, so a prompt's numbers are those
  of a cold read whatever came before; Ollama reuses the whole shared prefix
  (for SmolLM2 the prompt's split moved nothing measurable; for Gemma a
  different split of the same prompt moved a log-probability by 0.04).
* Options honoured: ``temperature``, ``seed``, ``num_predict``, ``top_k``,
  ``top_p``, ``min_p``, ``repeat_penalty``; the rest are ignored. Unset ones
  take Ollama's documented defaults (0.8, random, unlimited, 40, 0.9, 0.0, 1.1),
  but the samplers are llama-cpp-python's, so sampled text (temperature > 0)
  will not match a real Ollama's for the same seed.
* Streaming sends each token as generated, but the whole request holds the
  model: requests are served one at a time (Ollama can run several in parallel).
* ``/api/tags`` and ``/api/show`` carry made-up metadata (digest, dates,
  details) except the model name, its file size, and the file's sha256 in the
  Modelfile's ``FROM …/blobs/sha256-…`` line. Durations are wall-clock.
  Error texts are worded like Ollama's, not byte-identical.
* Not served: pull/push/create/copy/delete, embeddings, tools, images, thinking.
* ``requests`` records each POST's path and JSON body, for tests of what a client sends.
* ``logprobs=False`` makes it a server that ignores log-probability requests
  (as Ollama before 0.12.11 did); ``version`` sets what ``/api/version`` says.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import llama_cpp
import numpy as np
import tiers
from llama_cpp.llama_chat_format import Jinja2ChatFormatter
from llama_cpp.llama_grammar import JSON_GBNF
from servers import STOP_POLL

#: Prompt tokens per forward pass (the in-process backend's default too).
N_BATCH = 64


class OllamaError(Exception):
    """Answered as ``{"error": message}`` with ``status``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class OllamaStandIn:
    """The model and the API's logic; :meth:`serve` puts it on a loopback port."""

    def __init__(self, model_path: Path, name: str = "smollm2:135m", *, version: str = "0.12.11",
                 logprobs: bool = True, n_ctx: int = 2048) -> None:
        self.name, self.version, self.logprobs = name, version, logprobs
        self.path = model_path
        self.sha256 = hashlib.sha256(model_path.read_bytes()).hexdigest()
        self.llm = llama_cpp.Llama(model_path=str(model_path), n_ctx=n_ctx, n_batch=N_BATCH, n_threads=1,
                                   n_threads_batch=1, logits_all=True, verbose=False)
        bos, eos = (self.llm.detokenize([t], special=True).decode() for t in (self.llm.token_bos(), self.llm.token_eos()))
        self.bos = bos
        self.template = self.llm.metadata["tokenizer.chat_template"]
        self.formatter = Jinja2ChatFormatter(self.template, eos_token=eos, bos_token=bos)
        self.lock = threading.Lock()
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.server: ThreadingHTTPServer | None = None
        self.url = ""
        self.thread: threading.Thread | None = None

    # -- serving -----------------------------------------------------------------------

    def serve(self) -> str:
        """Start on 127.0.0.1 at a free port; return the base URL."""
        tiers.require("server", what="serving the Ollama stand-in")
        handler = type("Handler", (_Handler,), {"standin": self})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs=STOP_POLL, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        return self.url

    def close(self) -> None:
        """Stop serving and free the model."""
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            assert self.thread is not None
            self.thread.join()
        self.llm.close()

    # -- the API -----------------------------------------------------------------------

    def model_name(self, body: dict[str, Any]) -> str:
        name = body.get("model")
        if not isinstance(name, str) or not name:
            raise OllamaError(400, "model is required")
        full = name if ":" in name else f"{name}:latest"
        if full != self.name:
            raise OllamaError(404, f"model '{name}' not found")
        return self.name

    def tags(self) -> dict[str, Any]:
        return {"models": [{"name": self.name, "model": self.name, "modified_at": _now(),
                            "size": self.path.stat().st_size, "digest": self.manifest_digest(),
                            "details": self.details()}]}

    def show(self, body: dict[str, Any]) -> dict[str, Any]:
        self.model_name(body)
        modelfile = (f'# Modelfile generated by "ollama show"\nFROM /standin/blobs/sha256-{self.sha256}\n'
                     f'TEMPLATE """{self.template}"""\n')
        return {"modelfile": modelfile, "parameters": "", "template": self.template, "details": self.details(),
                "model_info": {"general.architecture": self.llm.metadata.get("general.architecture", "")},
                "capabilities": ["completion"], "modified_at": _now()}

    def details(self) -> dict[str, Any]:
        return {"parent_model": "", "format": "gguf", "family": "llama", "families": ["llama"],
                "parameter_size": "135M", "quantization_level": "Q4_1"}

    def manifest_digest(self) -> str:
        return hashlib.sha256(f"standin-manifest:{self.name}:{self.sha256}".encode()).hexdigest()

    def chat(self, body: dict[str, Any]) -> Iterator[dict[str, Any]]:
        name = self.model_name(body)
        messages = body.get("messages") or []
        if messages and messages[-1].get("role") == "assistant":  # continue the final assistant message
            prompt = self.formatter(messages=messages[:-1]).prompt + messages[-1].get("content", "")
        else:
            prompt = self.formatter(messages=messages).prompt
        for chunk in self.generate_text(prompt, body):
            text = chunk.pop("text")
            yield {"model": name, "created_at": _now(), "message": {"role": "assistant", "content": text}, **chunk}

    def generate(self, body: dict[str, Any]) -> Iterator[dict[str, Any]]:
        name = self.model_name(body)
        if body.get("raw"):
            prompt = body.get("prompt", "")
        else:
            system = [{"role": "system", "content": body["system"]}] if body.get("system") else []
            prompt = self.formatter(messages=[*system, {"role": "user", "content": body.get("prompt", "")}]).prompt
        for chunk in self.generate_text(prompt, body):
            yield {"model": name, "created_at": _now(), "response": chunk.pop("text"), **chunk}

    def generate_text(self, prompt: str, body: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """Chunks of ``{"text", "done", ...}``: one per token, then the final one with the counts."""
        options = body.get("options") or {}
        top = int(body.get("top_logprobs") or 0)
        want_logprobs = bool(body.get("logprobs")) and self.logprobs
        if not 0 <= top <= 20:
            raise OllamaError(400, "top_logprobs must be between 0 and 20")
        add_bos = not (self.bos and prompt.startswith(self.bos))
        tokens = self.llm.tokenize(prompt.encode(), add_bos=add_bos, special=True)
        limit = int(options.get("num_predict", -1))
        start = time.perf_counter_ns()
        with self.lock:
            self.keep_shared_prefix(tokens)
            stream = self.llm.create_completion(
                prompt=tokens, max_tokens=limit if limit > 0 else -1, stream=True,
                grammar=_grammar(body.get("format")), logprobs=max(top, 1) if want_logprobs else None,
                temperature=float(options.get("temperature", 0.8)), seed=options.get("seed"),
                top_k=int(options.get("top_k", 40)), top_p=float(options.get("top_p", 0.9)),
                min_p=float(options.get("min_p", 0.0)), repeat_penalty=float(options.get("repeat_penalty", 1.1)),
            )
            count, finish = 0, "stop"
            for part in stream:
                choice = part["choices"][0]
                finish = choice["finish_reason"] or finish
                if choice["logprobs"] is None and not choice["text"]:
                    continue
                count += 1
                chunk: dict[str, Any] = {"text": choice["text"], "done": False}
                if want_logprobs and choice["logprobs"]:
                    chunk["logprobs"] = self._logprobs(choice["logprobs"], top)
                yield chunk
        took = time.perf_counter_ns() - start
        yield {"text": "", "done": True, "done_reason": finish, "total_duration": took, "load_duration": 0,
               "prompt_eval_count": len(tokens), "prompt_eval_duration": took // 2, "eval_count": count,
               "eval_duration": took // 2}

    def _logprobs(self, raw: dict[str, Any], top: int) -> list[dict[str, Any]]:
        """The streamed token in Ollama's shape, its alternatives each token on its own, as Ollama lists them.

        llama-cpp-python's own alternatives are a dict by text, which keeps one of the tokens that
        share a text (SmolLM2 has 64 that print as ""): here the top k come from the logits row of
        the position (the last one read: the chunk comes before its token is read).
        """
        row = np.asarray(self.llm.scores[self.llm.n_tokens - 1], dtype=np.float64)
        logprobs = row - (row.max() + np.log(np.exp(row - row.max()).sum()))
        best = [int(t) for t in np.argsort(-logprobs, kind="stable")[:top]]
        (token, logprob), = zip(raw["tokens"], raw["token_logprobs"], strict=True)
        alternatives = [(self.piece(t), float(logprobs[t])) for t in best]
        return [{"token": token, "logprob": float(logprob), "bytes": list(token.encode()),
                 "top_logprobs": [{"token": t, "logprob": lp, "bytes": list(t.encode())} for t, lp in alternatives]}]

    def keep_shared_prefix(self, tokens: list[int]) -> None:
        """Keep what llama.cpp reads ``tokens`` on top of: one token after the kept prefix, or whole batches.

        llama.cpp's numbers depend on how a text is split into batches: "1" then "0" read one at
        a time give logits up to 0.30 apart from "10" read in one batch. A request one token longer
        than the kept prefix (a continuation right after its parent or a sibling) reads that
        token alone on the prefix's KV cells, as Ollama does and as the model does when it
        generates. Otherwise only whole 64-token batches are kept: the prompt is read as a
        cold read would. The same prompt again keeps everything (its logits are still there).
        """
        cached = [int(t) for t in self.llm.input_ids[: self.llm.n_tokens]]
        if cached == tokens:
            return
        shared = 0
        for old, new in zip(cached, tokens[:-1]):  # at least the last token is read again
            if old != new:
                break
            shared += 1
        self.llm.n_tokens = shared if shared == len(tokens) - 1 else shared - shared % N_BATCH

    def piece(self, token: int) -> str:
        """A token's text as Ollama prints it: special tokens by name, an incomplete character replaced."""
        return self.llm.detokenize([token], special=True).decode("utf-8", errors="replace")


def _grammar(fmt: Any) -> llama_cpp.LlamaGrammar | None:
    if fmt in (None, ""):
        return None
    if fmt == "json":
        return llama_cpp.LlamaGrammar.from_string(JSON_GBNF, verbose=False)
    if isinstance(fmt, dict):
        return llama_cpp.LlamaGrammar.from_json_schema(json.dumps(fmt), verbose=False)
    raise OllamaError(400, f"invalid format: {fmt!r}")


def _now() -> str:
    return datetime.now(UTC).isoformat()


class _Handler(BaseHTTPRequestHandler):
    standin: OllamaStandIn
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        routes = {"/api/version": lambda: {"version": self.standin.version}, "/api/tags": self.standin.tags}
        if self.path == "/":
            self._send(200, b"Ollama is running", "text/plain")
        elif self.path in routes:
            self._json(200, routes[self.path]())
        else:
            self._json(404, {"error": "404 page not found"})

    def do_POST(self) -> None:
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            if not isinstance(body, dict):
                raise OllamaError(400, "invalid request body")
            self.standin.requests.append((self.path, body))
            if self.path == "/api/show":
                return self._json(200, self.standin.show(body))
            routes = {"/api/chat": self.standin.chat, "/api/generate": self.standin.generate}
            if self.path not in routes:
                return self._json(404, {"error": "404 page not found"})
            self.standin.model_name(body)  # a 404 before any streaming starts
            self._reply(routes[self.path](body), stream=body.get("stream", True) is not False)
        except json.JSONDecodeError as err:
            self._json(400, {"error": f"invalid character in request body: {err.msg}"})
        except OllamaError as err:
            self._json(err.status, {"error": str(err)})

    def _reply(self, chunks: Iterator[dict[str, Any]], stream: bool) -> None:
        if not stream:
            return self._json(200, _merge(list(chunks)))
        first = next(chunks)  # errors in the request surface here, before the status line
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for chunk in itertools.chain([first], chunks):
            data = json.dumps(chunk).encode() + b"\n"
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.write(b"0\r\n\r\n")

    def _json(self, status: int, value: Any) -> None:
        self._send(status, json.dumps(value).encode(), "application/json; charset=utf-8")

    def _send(self, status: int, data: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _merge(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """A non-streaming reply: the final chunk, with the text and logprobs of them all."""
    final = dict(chunks[-1])
    key = "message" if "message" in final else "response"
    text = "".join(c["message"]["content"] if key == "message" else c["response"] for c in chunks)
    final[key] = {"role": "assistant", "content": text} if key == "message" else text
    logprobs = [item for c in chunks for item in c.get("logprobs", [])]
    if logprobs:
        final["logprobs"] = logprobs
    return final
