"""The in-process llama.cpp backend (llama-cpp-python): its options, the backend, its kind.

JSON generation is constrained by a grammar built from the schema; candidate
distributions come from the logits of one forward pass, read directly from the
context (no sampling, and no ``logits_all`` array of n_ctx × n_vocab floats).

llama.cpp's library and numpy are imported inside the functions that use them: a
config that names this backend is checked with :class:`LlamaCppOptions` alone.
"""

from __future__ import annotations

import json
import math
import os
import threading
from collections.abc import Iterable, MutableMapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Self

from pydantic import BeforeValidator, Field

from localeval.backends.base import (
    Backend,
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
from localeval.backends.branches import Branches, open_branching_context, sequences
from localeval.backends.catalog import ModelCatalog, ModelSpec, file_sha256
from localeval.backends.chat import ChatFormat, Prompt, SpecialTokens, chat_format_for, token_pieces
from localeval.backends.kind import BackendKind, BuildContext
from localeval.backends.options import BackendOptions
from localeval.backends.schema import DEFAULT_MAX_ITEMS, bound_arrays, checked_reply
from localeval.distribution import (
    ListedTokens,
    NextTokens,
    TokenClass,
    in_class,
    log_sum_exp,
    read_whole_answers,
)
from localeval.errors import BackendError, BackendUnavailable, CandidateError

if TYPE_CHECKING:
    import numpy as np

    from localeval.backends.greedy import Written


def _path_text(value: Any) -> Any:
    return os.fspath(value) if isinstance(value, os.PathLike) else value


#: A model name or a file path; a :class:`~pathlib.Path` is taken as its text.
ModelRef = Annotated[str, BeforeValidator(_path_text)]


def is_model_path(model: str) -> bool:
    """Whether ``model`` names a GGUF file rather than a model of the catalog."""
    return model.endswith(".gguf") or "/" in model or os.sep in model


class LlamaCppOptions(BackendOptions):
    """The in-process llama.cpp backend (llama-cpp-python): the keys of its ``[backend]`` table."""

    kind: Literal["llama.cpp"] = "llama.cpp"
    model: ModelRef | None = Field(
        None, description="A model from `localeval models list` or a GGUF file's path; None: the default model."
    )
    n_threads: int = Field(1, ge=1, description="CPU threads for prompt reading and generation.")
    n_ctx: int = Field(4096, ge=256, description="Context window in tokens.")
    n_batch: int = Field(
        64,
        ge=8,
        description=(
            "Prompt tokens per forward-pass batch. Prompts are read in batches aligned to "
            "multiples of this, and only whole aligned batches of a shared prefix are reused, "
            "so a score never depends on what was read before it."
        ),
    )
    max_items: int = Field(DEFAULT_MAX_ITEMS, ge=1, description="maxItems for unbounded arrays.")
    top_logprobs: int | None = Field(
        None, ge=1,
        description=(
            "Count only the k most likely tokens at each position, as a server that lists k "
            "alternatives does (to compare with one); None: the whole vocabulary, exact."
        ),
    )
    batch_continuations: bool = Field(
        False,
        description=(
            "Read the reply prefixes of one depth of a whole-answer score as one batch of sequences "
            "instead of one token at a time: fewer passes, but llama.cpp's batched numbers differ from "
            "one token at a time (and from a server), so scores move (docs/measurements/score-cost.md)."
        ),
    )

    def rebased(self, base: Path) -> Self:
        """A relative model path made relative to ``base``; a model name stays a name."""
        model = self.model
        if model is None or not is_model_path(model) or Path(model).is_absolute():
            return self
        return self.model_copy(update={"model": os.path.normpath(base / model)})

#: JSON's string character. llama-cpp-python's own rule (``[^"\\\\] | ...``) lets a raw control
#: character, a newline say, into a string: JSON forbids that, and the reply would fail to parse.
JSON_CHAR_RULE = r'''char ::= [^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])'''


def json_grammar(schema: dict[str, Any]) -> str:
    """The GBNF grammar of ``schema``: llama-cpp-python's conversion, with JSON's string characters."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    lines = json_schema_to_gbnf(json.dumps(schema, sort_keys=True)).splitlines()
    return "\n".join(JSON_CHAR_RULE if line.startswith("char ::= ") else line for line in lines)


@dataclass(frozen=True)
class Vocabulary:
    """A model's token texts, indexed for reading whole answers (read once per model).

    Texts are as a server reports them: the token's bytes as UTF-8, an
    incomplete character dropped, special tokens empty (they end an answer).
    """

    text_of: tuple[str, ...]  # each token's text, by id
    ids: dict[str, np.ndarray]  # token ids by text
    by_core: dict[str, tuple[str, ...]]  # texts by their whitespace-stripped core
    classes: dict[TokenClass, np.ndarray]  # boolean masks (True in the class), one masked sum each

    @classmethod
    def from_texts(cls, texts: Sequence[str]) -> Vocabulary:
        import numpy as np

        ids: dict[str, list[int]] = {}
        for token, text in enumerate(texts):
            ids.setdefault(text, []).append(token)
        by_core: dict[str, list[str]] = {}
        for text in ids:
            if text.strip():
                by_core.setdefault(text.strip(), []).append(text)
        classes: dict[TokenClass, np.ndarray] = {
            name: np.array([in_class(t, name) for t in texts], dtype=bool)
            for name in ("ends", "point", "no_digit")
        }
        return cls(
            text_of=tuple(texts),
            ids={t: np.array(i, dtype=np.intp) for t, i in ids.items()},
            by_core={core: tuple(found) for core, found in by_core.items()},
            classes=classes,
        )


class VocabularyTokens:
    """The next-token distribution over the whole vocabulary at one position (a ``NextTokens``).

    Kept as logits and their log-normalizer: a token's log-probability is one
    subtraction, a class's mass one masked sum — no log-softmax array per position.
    """

    def __init__(self, logits: np.ndarray, vocabulary: Vocabulary) -> None:
        import numpy as np

        self._logits = logits.astype(np.float64)
        top = float(self._logits.max())
        self._probabilities = np.exp(self._logits - top)
        total = float(self._probabilities.sum())
        self._log_total = top + math.log(total)
        self._probabilities /= total
        self._vocabulary = vocabulary
        self._classes: dict[TokenClass, float] = {}

    def texts(self, answer: str) -> Iterable[str]:
        by_core = self._vocabulary.by_core
        return [text for end in range(1, len(answer) + 1) for text in by_core.get(answer[:end], ())]

    def logprob(self, text: str) -> float:
        ids = self._vocabulary.ids.get(text)
        if ids is None:
            return -math.inf
        return log_sum_exp((self._logits[ids] - self._log_total).tolist())

    def class_logprob(self, token_class: TokenClass, *, listed_only: bool = False) -> float:
        # Every token is listed here: nothing is estimated, and listed_only changes nothing.
        if token_class not in self._classes:
            # numpy's own sum, not a BLAS dot product: BLAS splits a long one between its threads, and the
            # sum's last bits then depend on how many it has (Ray workers get one): scores 5e-16 apart.
            mass = float(self._probabilities[self._vocabulary.classes[token_class]].sum())
            self._classes[token_class] = math.log(mass) if mass > 0.0 else -math.inf
        return self._classes[token_class]

    def top(self, k: int) -> ListedTokens:
        """The k most likely tokens only, as a server capped at k lists them."""
        import numpy as np

        chosen = np.argpartition(-self._logits, k - 1)[:k] if k < self._logits.size else np.arange(self._logits.size)
        return ListedTokens.summed((self._vocabulary.text_of[int(i)], float(self._logits[i] - self._log_total))
                                   for i in chosen)


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
            if self.options.batch_continuations:
                open_branching_context(self._llm, self.options.n_batch)
        except (ValueError, RuntimeError) as err:
            raise BackendUnavailable(f"{model_path}: llama.cpp cannot load this model ({err})") from err
        self._llama_cpp = llama_cpp
        self._lock = threading.Lock()
        self._grammars: dict[str, Any] = {}
        self._vocab: Vocabulary | None = None
        self._specials = self._special_tokens()
        self._format = self._chat_format()
        self._fingerprint = Fingerprint(
            kind="llama.cpp",
            model=self.spec.name,
            model_sha256=file_sha256(model_path, sha256_memo),
            runtime=f"llama-cpp-python {llama_cpp.__version__}",
            settings={
                "chat_format": self._format.identity,
                "n_batch": self.options.n_batch,
                # What a candidate's probability is: a cache filled before it was the
                # whole answer's (P(c) · P(end | c)) must not answer for it.
                "candidates": "whole answer",
                "top_logprobs": self.options.top_logprobs,
                # Only when on, so caches filled one token at a time keep their keys.
                **({"continuations": "batched"} if self.options.batch_continuations else {}),
            },
        )

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(
            json_schema=True, distribution=True, multi_token_candidates=True,
            max_top_logprobs=self.options.top_logprobs, text=True, text_as_data=True,  # chat.py's split prompt
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
            written = self._write_json(tokens, self._grammar(schema), request)
        usage = Usage(prompt_tokens=len(tokens), completion_tokens=written.completion_tokens)
        return checked_reply(written.text, schema, written.finish_reason, usage, request.max_tokens)

    def _write_json(self, tokens: list[int], grammar: Any, request: JsonRequest) -> Written:
        """The reply after ``tokens`` (read last) under ``grammar``: greedy asks the grammar about the
        most likely token first (:mod:`~localeval.backends.greedy`), the same tokens create_completion writes."""
        if request.temperature == 0.0:
            from localeval.backends.greedy import write_greedy

            return write_greedy(self._llm, grammar, tokens, request.max_tokens, request.seed)
        return self._completion(tokens, grammar, request)

    def _completion(self, tokens: list[int], grammar: Any, request: JsonRequest) -> Written:
        """llama-cpp-python's create_completion under ``grammar``: sampling, and the reference for greedy."""
        from localeval.backends.greedy import Written

        out = self._llm.create_completion(
            prompt=tokens,
            grammar=grammar,
            max_tokens=request.max_tokens,
            temperature=request.temperature,
            seed=request.seed,
            # Sample from the model's full distribution (within the grammar):
            # no top-k/top-p/min-p truncation, no repetition penalty.
            top_k=0, top_p=1.0, min_p=0.0, repeat_penalty=1.0,
        )
        choice = out["choices"][0]  # type: ignore[index]
        return Written(choice["text"], choice["finish_reason"] or "stop",
                       out["usage"]["completion_tokens"])  # type: ignore[index]

    def _grammar(self, schema: dict[str, Any]) -> Any:
        key = json.dumps(schema, sort_keys=True)
        if key not in self._grammars:
            from llama_cpp.llama_grammar import LlamaGrammar

            self._grammars[key] = LlamaGrammar.from_string(json_grammar(schema), verbose=False)
        return self._grammars[key]

    # -- Candidate distributions -------------------------------------------------------

    def candidate_distribution(self, request: DistributionRequest) -> DistributionReply:
        prompt = self._format.render(request.messages, request.prefill)
        room = max(len(self._candidate_tokens(c)) for c in request.candidates) + 2  # the candidate, "." and one more
        if self.options.batch_continuations:
            # that many branches at once, each perhaps from the prompt's last token on
            room = (sequences(self.options.n_batch) - 1) * (room + 1)
        tokens = self._prompt_tokens(prompt, room)
        positions: list[str] = []

        def view(logits: np.ndarray) -> NextTokens:
            whole = VocabularyTokens(logits, self._vocabulary())
            return whole if self.options.top_logprobs is None else whole.top(self.options.top_logprobs)

        def after(prefix: str) -> NextTokens:
            positions.append(prefix)
            return view(self._logits_after(tokens, prompt, prefix))

        with self._lock:
            if not self.options.batch_continuations:
                whole = read_whole_answers(request.candidates, after, request.prune_below)
            else:
                branches = Branches(self._llm, self.options.n_batch)

                def by_depth(prefixes: Sequence[str]) -> list[NextTokens]:
                    if list(prefixes) == [""]:  # the score position: the prompt, as one token at a time reads it
                        return [after("")]
                    positions.extend(prefixes)
                    read = branches.read([self._prompt_tokens(prompt.then(p), 0) for p in prefixes])
                    return [view(logits) for logits in read]

                try:
                    whole = read_whole_answers(request.candidates, after, request.prune_below, by_depth=by_depth)
                finally:
                    branches.close()
        return DistributionReply(
            distribution=whole.distribution(),
            usage=Usage(prompt_tokens=len(tokens), completion_tokens=len(positions) - 1),
        )

    def _logits_after(self, prompt_tokens: list[int], prompt: Prompt, prefix: str) -> np.ndarray:
        """The logits after the prompt and then ``prefix`` (text the reply writes): one forward pass.

        The prompt is read first (``prefix`` ""), in aligned batches (:meth:`_read_prompt`).
        A prefix is tokenized with the prompt, as a server tokenizes the prompt it
        is sent, and only what is not in the context yet is read
        (:meth:`_read_continuation`). :func:`read_whole_answers` asks for prefixes in
        preorder, so that is one token on top of its parent's KV cells: what the
        model computes when it generates, and what llama-cpp-python's server and
        Ollama compute for the same requests in the same order.
        """
        if not prefix:
            self._read_prompt(prompt_tokens)
        else:
            self._read_continuation(self._prompt_tokens(prompt.then(prefix), 0))
        import numpy as np

        pointer = self._llama_cpp.llama_get_logits_ith(self._llm.ctx, -1)
        return np.ctypeslib.as_array(pointer, shape=(self._llm.n_vocab(),)).copy()

    def _read_continuation(self, tokens: list[int]) -> None:
        """Read ``tokens`` on top of the longest prefix of them in the context, as one batch.

        llama-cpp-python's own rule for a new prompt (``Llama.generate``), which its
        server follows: keep the shared prefix, read the rest (at least the last
        token). The batches matter: "1" then "0" read one at a time give logits up
        to 0.30 apart in log-probability from "10" read in one batch (SmolLM2 Q4_1,
        measured); read the same way as the server, they agree within 4e-7.
        """
        cached = self._llm.input_ids[: self._llm.n_tokens]
        limit = min(len(cached), len(tokens) - 1)
        self._llm.n_tokens = _shared_prefix(cached, tokens, limit)  # eval() drops the KV cells from here on
        self._llm.eval(tokens[self._llm.n_tokens:])

    def _vocabulary(self) -> Vocabulary:
        """The vocabulary's texts, indexed; read once per model."""
        if self._vocab is None:
            texts = [self._llm.detokenize([t], special=False).decode("utf-8", errors="ignore")
                     for t in range(self._llm.n_vocab())]
            self._vocab = Vocabulary.from_texts(texts)
        return self._vocab

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
        shared = _shared_prefix(cached, tokens, limit)
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

    def _prompt_tokens(self, prompt: Prompt, room: int) -> list[int]:
        """The tokens of ``prompt``: special tokens where the template wrote them, all else as text.

        A message's content that spells ``<|im_end|>`` is read as the characters it is
        made of (:func:`~localeval.backends.chat.token_pieces`); a prompt without such
        strings in its contents is the same tokens as its whole text tokenized with
        special tokens parsed. The BOS token is added, when the model's vocabulary asks
        for it, unless the template wrote it.
        """
        pieces = token_pieces(prompt, self._specials)
        body: list[int] = []
        for piece in pieces:
            body += [piece] if isinstance(piece, int) else self._llm.tokenize(
                piece.encode("utf-8"), add_bos=False, special=False)
        bos = self._llm.token_bos()
        framing = self._llm.tokenize(b"", add_bos=pieces[:1] != [bos], special=False)  # BOS (and EOS) it adds
        head = framing[:1] if framing[:1] == [bos] else []
        tokens = head + body + framing[len(head):]
        if len(tokens) + room > self.options.n_ctx:
            raise BackendError(
                f"prompt of {len(tokens)} tokens plus {room} to generate does not fit the "
                f"context of {self.options.n_ctx} tokens; raise n_ctx"
            )
        return tokens

    def _special_tokens(self) -> SpecialTokens:
        """The tokens only special parsing makes of their text (control and unknown), read once."""
        llama_cpp = self._llama_cpp
        vocab = llama_cpp.llama_model_get_vocab(self._llm.model)
        special = llama_cpp.LLAMA_TOKEN_ATTR_CONTROL | llama_cpp.LLAMA_TOKEN_ATTR_UNKNOWN
        ids: dict[str, int] = {}
        before: set[str] = set()
        after: set[str] = set()
        for token in range(self._llm.n_vocab()):
            attributes = llama_cpp.llama_vocab_get_attr(vocab, token)
            if not attributes & special:
                continue
            text = llama_cpp.llama_vocab_get_text(vocab, token).decode("utf-8", errors="replace")
            ids.setdefault(text, token)
            if attributes & llama_cpp.LLAMA_TOKEN_ATTR_LSTRIP:
                before.add(text)
            if attributes & llama_cpp.LLAMA_TOKEN_ATTR_RSTRIP:
                after.add(text)
        return SpecialTokens(ids, frozenset(before), frozenset(after))

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


def _shared_prefix(cached: np.ndarray, tokens: list[int], limit: int) -> int:
    """How many of the first ``limit`` of ``tokens`` the context holds already (``cached``: its token ids)."""
    import numpy as np

    differ = np.flatnonzero(cached[:limit] != np.asarray(tokens[:limit], dtype=cached.dtype))
    return int(differ[0]) if differ.size else limit


def _build(options: LlamaCppOptions, context: BuildContext) -> Backend:
    spec, path = ModelCatalog.from_environ(context.paths.home, context.environ).resolve(options.model)
    return LlamaCppBackend(path, spec, options, context.sha256_memo)


#: The kind ``llama.cpp``: what :mod:`localeval.backends.builtin` registers.
KIND = BackendKind("llama.cpp", LlamaCppOptions, _build, "A GGUF model run in this process (llama-cpp-python).")
