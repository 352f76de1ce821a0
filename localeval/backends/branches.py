"""Reply prefixes read as branches of the prompt, several in one llama.cpp batch (``batch_continuations``).

A whole-answer score reads the next-token distribution after each prefix of
the reply it needs (:func:`localeval.distribution.read_whole_answers`). The
prefixes of one depth of the candidate trie are independent given the prompt:
here each is a sequence of its own in one KV cache, sharing the prompt's cells
(sequence 0) or its parent's, and a depth's new tokens are decoded together,
as few ``llama_decode`` calls as ``n_batch`` and the sequences allow.

The numbers are not those of one token at a time. llama.cpp's CPU kernels sum
in an order that depends on where a token's KV cell sits and on the batch's
shape; most such differences are rounded away by the 8-bit quantization of
activations, and the rest are amplified by it. Measured (SmolLM2 Q4_1, a
0-10 prompt): of ten digits read as one batch, three gave logits bit-identical
to reading each alone, seven differed by 0.44-0.68 in a logit; the same batch
gives the same numbers every time. So this path is off by default, and on it the
fingerprint says so (docs/measurements/score-cost.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from localeval.errors import BackendError

if TYPE_CHECKING:
    import numpy as np

def sequences(n_batch: int) -> int:
    """The sequences a context holds: the prompt's (0) and branches. llama.cpp reserves an output row
    of n_vocab floats per sequence (and per token of a batch, n_batch): as many as the batch costs nothing more."""
    return min(n_batch, 256)  # llama.cpp's limit (llama_max_parallel_sequences)


def open_branching_context(llm: Any, n_batch: int) -> None:
    """Give ``llm`` (a ``llama_cpp.Llama`` that has read nothing yet) a context of :func:`sequences`
    sequences in one KV cache of its ``n_ctx`` cells.

    ``Llama`` opens one sequence and takes no parameter for more, so its context
    is opened again with the same parameters and these changed.
    """
    from llama_cpp import _internals

    params = llm.context_params
    params.n_seq_max = params.n_outputs_max = sequences(n_batch)  # llama.cpp wants an output row per sequence
    params.kv_unified = True  # one cache: a branch's cells are the prompt's, tagged, not copies
    context = _internals.LlamaContext(model=llm._model, params=params, verbose=False)
    previous, llm._ctx = llm._ctx, context
    previous.close()


@dataclass
class _Branch:
    tokens: tuple[int, ...]
    on_prompt: int  # how many of its first tokens are the prompt's
    sequence: int
    cached: int  # how many of its first tokens have KV cells: all once decoded, those it was copied with before


class Branches:
    """The branches of one score's reading; :meth:`close` drops them and leaves the prompt's sequence.

    Each :meth:`read` is one depth: its branches branch off the previous depth's
    (or the prompt), which are dropped once it is read.
    """

    def __init__(self, llm: Any, n_batch: int) -> None:
        import llama_cpp

        self._lib = llama_cpp
        self._llm = llm
        self._n_batch = n_batch
        self._memory = llama_cpp.llama_get_memory(llm.ctx)
        self._batch = llama_cpp.llama_batch_init(n_batch, 0, 1)
        self._batch.n_tokens = 0
        self._free = list(range(sequences(n_batch) - 1, 0, -1))
        self._live: list[_Branch] = []

    def read(self, branches: Sequence[list[int]]) -> list[np.ndarray]:
        """The logits after each of ``branches`` (the prompt's tokens, then a prefix's), in that order."""
        parents, self._live = self._live, []
        logits: list[np.ndarray] = []
        pending: list[int] = []  # each branch's last token: its index in the batch
        for tokens in branches:
            if not self._free:  # read what is pending, then drop this depth's branches (their own may re-read them)
                logits += self._decode(pending)
                for branch in self._live or parents:
                    self._drop(branch)
                (self._live if self._live else parents).clear()
            branch, start = self._branch(tokens, parents)
            count = len(tokens) - start
            if count > self._n_batch:
                raise BackendError(f"a reply prefix of {count} new tokens does not fit a batch of {self._n_batch}")
            if self._batch.n_tokens + count > self._n_batch:
                logits += self._decode(pending)
            for offset in range(count):
                self._add(tokens[start + offset], start + offset, branch.sequence, offset == count - 1)
            pending.append(self._batch.n_tokens - 1)
            self._live.append(branch)
        logits += self._decode(pending)
        for parent in parents:
            self._drop(parent)
        return logits

    def close(self) -> None:
        """Drop every branch; the prompt's sequence stays as it was read."""
        for branch in self._live:
            self._drop(branch)
        self._live = []
        self._lib.llama_batch_free(self._batch)

    def _branch(self, tokens: list[int], parents: list[_Branch]) -> tuple[_Branch, int]:
        """A new sequence for ``tokens``, holding the longest start of them already read; and its length."""
        prompt = self._llm.input_ids[: self._llm.n_tokens]
        on_prompt = _common_start(prompt, tokens)
        source, shared = 0, on_prompt
        for parent in (*parents, *self._live):
            if parent.on_prompt == on_prompt:  # else they share only what both share with the prompt
                length = on_prompt + _common_start(parent.tokens[on_prompt:parent.cached], tokens[on_prompt:])
                if length > shared:
                    source, shared = parent.sequence, length
        shared = min(shared, len(tokens) - 1)  # read at least one token, for its logits
        sequence = self._free.pop()
        self._lib.llama_memory_seq_cp(self._memory, source, sequence, 0, shared)
        return _Branch(tuple(tokens), on_prompt, sequence, cached=shared), shared

    def _add(self, token: int, position: int, sequence: int, logits: bool) -> None:
        batch = self._batch
        index = batch.n_tokens
        batch.n_tokens += 1
        batch.token[index] = token
        batch.pos[index] = position
        batch.n_seq_id[index] = 1
        batch.seq_id[index][0] = sequence
        batch.logits[index] = logits

    def _decode(self, pending: list[int]) -> list[np.ndarray]:
        """Decode the batch; the logits at each of ``pending`` (emptied, as the batch is)."""
        used = self._batch.n_tokens
        if not used:
            return []
        import numpy as np

        status = self._lib.llama_decode(self._llm.ctx, self._batch)
        self._batch.n_tokens = 0
        if status != 0:
            raise BackendError(
                f"llama.cpp could not read {used} continuation tokens as one batch (llama_decode returned "
                f"{status}): the context is full; raise n_ctx or leave batch_continuations off"
            )
        for branch in self._live:
            branch.cached = len(branch.tokens)
        n_vocab = self._llm.n_vocab()
        found = [np.ctypeslib.as_array(self._lib.llama_get_logits_ith(self._llm.ctx, index), shape=(n_vocab,)).copy()
                 for index in pending]
        pending.clear()
        return found

    def _drop(self, branch: _Branch) -> None:
        self._lib.llama_memory_seq_rm(self._memory, branch.sequence, -1, -1)
        self._free.append(branch.sequence)


def _common_start(a: Sequence[int], b: Sequence[int]) -> int:
    """How many first items ``a`` and ``b`` share."""
    import numpy as np

    n = min(len(a), len(b))
    differ = np.flatnonzero(np.asarray(a[:n]) != np.asarray(b[:n]))
    return int(differ[0]) if differ.size else n
