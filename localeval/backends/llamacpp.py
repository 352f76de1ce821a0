"""The in-process llama.cpp backend (llama-cpp-python).

JSON generation is constrained by a grammar built from the schema; candidate
distributions come from the logits of one forward pass, read directly from the
context (no sampling, and no ``logits_all`` array of n_ctx × n_vocab floats).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, MutableMapping
from pathlib import Path
from typing import Any

import numpy as np

from localeval.backends.base import (
    Capabilities,
    DistributionReply,
    DistributionRequest,
    Fingerprint,
    JsonReply,
    JsonRequest,
    TextReply,
    TextRequest,
    Usage,
)
from localeval.backends.chat import ChatFormat, chat_format_for
from localeval.backends.options import LlamaCppOptions
from localeval.backends.schema import bound_arrays, checked_reply
from localeval.catalog import ModelSpec, file_sha256
from localeval.distribution import exclusive_logprobs, renormalize
from localeval.errors import BackendError, BackendUnavailable, CandidateError

#: JSON's string character. llama-cpp-python's own rule (``[^"\\\\] | ...``) lets a raw control
#: character, a newline say, into a string: JSON forbids that, and the reply would fail to parse.
JSON_CHAR_RULE = r'''char ::= [^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])'''


def json_grammar(schema: dict[str, Any]) -> str:
    """The GBNF grammar of ``schema``: llama-cpp-python's conversion, with JSON's string characters."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    lines = json_schema_to_gbnf(json.dumps(schema, sort_keys=True)).splitlines()
    return "\n".join(JSON_CHAR_RULE if line.startswith("char ::= ") else line for line in lines)


class LlamaCppBackend:
    """A GGUF model run in this process. Calls are serialized: one context, one lock."""

    def __init__(
        self,
        model_path: Path,
        spec: ModelSpec | None = None,
        options: LlamaCppOptions | None = None,
        sha256_memo: MutableMapping[str, str] | None = None,
    ) -> None:
        import llama_cpp  # imported here: loading the library is not free

        self.options = options or LlamaCppOptions()
        self.spec = spec or ModelSpec(name=model_path.stem, file=model_path.name, path=model_path)
        try:
            self._llm = llama_cpp.Llama(
                model_path=str(model_path),
                n_ctx=self.options.n_ctx,
                n_batch=self.options.n_batch,
                n_threads=self.options.n_threads,
                n_threads_batch=self.options.n_threads,
                logits_all=False,
                verbose=False,
            )
        except (ValueError, RuntimeError) as err:
            raise BackendUnavailable(f"{model_path}: llama.cpp cannot load this model ({err})") from err
        self._llama_cpp = llama_cpp
        self._lock = threading.Lock()
        self._grammars: dict[str, Any] = {}
        self._format = self._chat_format()
        self._fingerprint = Fingerprint(
            kind="llama.cpp",
            model=self.spec.name,
            model_sha256=file_sha256(model_path, sha256_memo),
            runtime=f"llama-cpp-python {llama_cpp.__version__}",
            settings={
                "chat_format": self._format.identity,
                "n_batch": self.options.n_batch,
            },
        )

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(
            json_schema=True, distribution=True, multi_token_candidates=True, max_top_logprobs=None,
            text=True,
        )

    @property
    def fingerprint(self) -> Fingerprint:
        return self._fingerprint

    def close(self) -> None:
        """Free the model now rather than at garbage collection."""
        self._llm.close()

    # -- JSON generation ---------------------------------------------------------------

    def generate_json(self, request: JsonRequest) -> JsonReply:
        schema = bound_arrays(request.json_schema, self.options.max_items)
        tokens = self._prompt_tokens(self._format.render(request.messages), request.max_tokens)
        with self._lock:
            self._read_prompt(tokens)  # aligned, so generation continues from an exact KV state
            out = self._llm.create_completion(
                prompt=tokens,
                grammar=self._grammar(schema),
                max_tokens=request.max_tokens,
                temperature=request.temperature,
                seed=request.seed,
                # Sample from the model's full distribution (within the grammar):
                # no top-k/top-p/min-p truncation, no repetition penalty.
                top_k=0, top_p=1.0, min_p=0.0, repeat_penalty=1.0,
            )
        choice = out["choices"][0]  # type: ignore[index]
        usage = Usage(
            prompt_tokens=out["usage"]["prompt_tokens"],  # type: ignore[index]
            completion_tokens=out["usage"]["completion_tokens"],  # type: ignore[index]
        )
        return checked_reply(choice["text"], schema, choice["finish_reason"] or "stop", usage, request.max_tokens)

    def _grammar(self, schema: dict[str, Any]) -> Any:
        key = json.dumps(schema, sort_keys=True)
        if key not in self._grammars:
            from llama_cpp.llama_grammar import LlamaGrammar

            self._grammars[key] = LlamaGrammar.from_string(json_grammar(schema), verbose=False)
        return self._grammars[key]

    # -- Candidate distributions -------------------------------------------------------

    def candidate_distribution(self, request: DistributionRequest) -> DistributionReply:
        prompt = self._format.render(request.messages, request.prefill)
        candidates = {c: self._candidate_tokens(c) for c in request.candidates}
        longest = max(len(t) for t in candidates.values())
        tokens = self._prompt_tokens(prompt, longest)
        with self._lock:
            logprobs, extra = self._score_candidates(tokens, candidates)
        return DistributionReply(
            distribution=renormalize(exclusive_logprobs(logprobs, candidates)),
            usage=Usage(prompt_tokens=len(tokens), completion_tokens=extra),
        )

    def _score_candidates(
        self, prompt: list[int], candidates: Mapping[str, list[int]]
    ) -> tuple[dict[str, float], int]:
        """Each candidate's exact sequence log-probability; multi-token ones read token by token."""
        first = self._next_logprobs(prompt)
        logprobs: dict[str, float] = {}
        extra = 0
        for text, toks in candidates.items():
            total = float(first[toks[0]])
            for i in range(1, len(toks)):
                total += float(self._next_logprobs(prompt + toks[:i])[toks[i]])
                extra += 1
            logprobs[text] = total
        return logprobs, extra

    def _next_logprobs(self, tokens: list[int]) -> np.ndarray:
        """Log-probabilities of every vocabulary token after ``tokens``: one forward pass."""
        self._read_prompt(tokens)
        pointer = self._llama_cpp.llama_get_logits_ith(self._llm.ctx, -1)
        logits = np.ctypeslib.as_array(pointer, shape=(self._llm.n_vocab(),)).astype(np.float64)
        top = logits.max()
        logprobs: np.ndarray = logits - (top + np.log(np.exp(logits - top).sum()))
        return logprobs

    def _read_prompt(self, tokens: list[int]) -> None:
        """Bring the context to exactly ``tokens``, reusing the cached prefix where it can.

        llama.cpp's numbers depend on how a prompt is split into batches (57 tokens
        read at once give other logits than 56 then 1). Reading in batches that
        start at multiples of n_batch, and keeping only whole batches of the shared
        prefix, gives every token the same batch it would have in a cold read: the
        result is bit-identical whatever was read before.
        """
        batch = self.options.n_batch
        cached = self._llm.input_ids[: self._llm.n_tokens]
        limit = min(len(cached), len(tokens) - 1)  # read at least one token, for fresh logits
        differ = np.flatnonzero(cached[:limit] != np.asarray(tokens[:limit], dtype=cached.dtype))
        shared = int(differ[0]) if differ.size else limit
        keep = shared - shared % batch
        self._llm.n_tokens = keep  # eval() drops the KV cells from here on
        self._llm.eval(tokens[keep:])  # eval() splits into n_batch batches from `keep`

    def count_tokens(self, text: str) -> int:
        """How many tokens ``text`` is on this model's tokenizer (no BOS; special tokens as text).

        Optional for backends: the synthesizer cuts documents into chunks by it when offered.
        """
        with self._lock:
            return len(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def _candidate_tokens(self, text: str) -> list[int]:
        tokens = self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)
        if not tokens:
            raise CandidateError(f"candidate {text!r} encodes to no tokens")
        return tokens

    # -- Prompts -----------------------------------------------------------------------

    def _prompt_tokens(self, prompt: str, room: int) -> list[int]:
        bos = self._special_text(self._llm.token_bos())
        add_bos = not (bos and prompt.startswith(bos))  # the template wrote it already
        tokens = self._llm.tokenize(prompt.encode("utf-8"), add_bos=add_bos, special=True)
        if len(tokens) + room > self.options.n_ctx:
            raise BackendError(
                f"prompt of {len(tokens)} tokens plus {room} to generate does not fit the "
                f"context of {self.options.n_ctx} tokens; raise n_ctx"
            )
        return tokens

    def _special_text(self, token: int) -> str:
        if token < 0:
            return ""
        return self._llm.detokenize([token], special=True).decode("utf-8", errors="replace")

    def _chat_format(self) -> ChatFormat:
        return chat_format_for(
            self.spec.chat_template,
            embedded=self._llm.metadata.get("tokenizer.chat_template"),
            bos_token=self._special_text(self._llm.token_bos()),
            eos_token=self._special_text(self._llm.token_eos()),
        )

    # -- Free text (a target) -----------------------------------------------------------

    def generate_text(self, request: TextRequest) -> TextReply:
        """The model's reply to ``request.messages``, sampled as the request says, unconstrained."""
        tokens = self._prompt_tokens(self._format.render(request.messages), request.max_tokens)
        with self._lock:
            self._read_prompt(tokens)
            out = self._llm.create_completion(
                prompt=tokens, max_tokens=request.max_tokens, temperature=request.temperature,
                seed=request.seed, stop=list(request.stop) or None,
                top_k=0, top_p=1.0, min_p=0.0, repeat_penalty=1.0,
            )
        choice = out["choices"][0]  # type: ignore[index]
        usage = Usage(
            prompt_tokens=out["usage"]["prompt_tokens"],  # type: ignore[index]
            completion_tokens=out["usage"]["completion_tokens"],  # type: ignore[index]
        )
        return TextReply(text=choice["text"], finish_reason=choice["finish_reason"] or "stop", usage=usage)
