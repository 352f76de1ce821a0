"""Greedy JSON writing under a grammar, the grammar asked about the most likely token first.

llama-cpp-python's ``create_completion`` with a grammar samples each token through a chain of
llama.cpp samplers (penalties, the grammar, greedy at temperature 0) that applies the grammar to
every token of the vocabulary before greedy takes the most likely: with Qwen's 151,936 tokens a
quarter of the time a reason takes to write (docs/measurements/speed.md). Greedy needs only the
most likely token the grammar allows. Here the grammar is asked about the model's most likely
token alone; only when it refuses it does the same chain run over the whole vocabulary (this is
llama.cpp's own common sampler's rejection step).

The tokens written are create_completion's: llama.cpp's grammar judges each token of an array on
its own, and its greedy sampler takes the first of equal logits, as ``numpy.argmax`` does; the
penalties sampler does nothing at ``repeat_penalty=1.0`` and no frequency or presence penalty. The
loop around it is create_completion's (``Llama._create_completion`` and ``Llama.generate``,
llama-cpp-python 0.3.36): the first token from the logits the prompt's read left, each token
read (``Llama.eval``) only once the next is needed, so the context ends as create_completion
leaves it (the last token written, or the end-of-generation token, unread); a token that ends
in an unfinished UTF-8 character does not count against ``max_tokens`` yet; the seed set as it
sets it.

llama.cpp's library and numpy are imported inside the functions, as in every backend module.
"""

from __future__ import annotations

import ctypes
import math
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from localeval.errors import BackendError

if TYPE_CHECKING:
    import llama_cpp
    from llama_cpp.llama_grammar import LlamaGrammar


@dataclass(frozen=True)
class Written:
    """What create_completion would return: the text, why it ended, the tokens it counts."""

    text: str
    finish_reason: Literal["stop", "length"]
    completion_tokens: int
    refusals: int = 0  # tokens the grammar refused, each answered from the whole vocabulary


class GrammarGreedy:
    """The grammar and greedy as one llama.cpp sampler chain, and the grammar alone on one token."""

    def __init__(self, llm: llama_cpp.Llama, grammar: LlamaGrammar) -> None:
        import llama_cpp

        self._llm = llm
        self._chain = llama_cpp.llama_sampler_chain_init(llama_cpp.llama_sampler_chain_default_params())
        vocab = llama_cpp.llama_model_get_vocab(llm.model)
        # As llama-cpp-python's LlamaSampler.add_grammar makes it; the chain owns (and frees) it.
        self._grammar = llama_cpp.llama_sampler_init_grammar(
            vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8"))
        if not self._grammar:
            llama_cpp.llama_sampler_free(self._chain)
            raise BackendError("llama.cpp cannot read the JSON grammar")
        llama_cpp.llama_sampler_chain_add(self._chain, self._grammar)
        llama_cpp.llama_sampler_chain_add(self._chain, llama_cpp.llama_sampler_init_greedy())
        self._one = llama_cpp.llama_token_data()
        self._asked = llama_cpp.llama_token_data_array(data=ctypes.pointer(self._one), size=1, selected=-1, sorted=False)
        self.refusals = 0

    def next_token(self) -> int:
        """The most likely token the grammar allows after the last token read; the grammar takes it."""
        import llama_cpp
        import numpy as np

        pointer = llama_cpp.llama_get_logits_ith(self._llm.ctx, -1)
        token = int(np.ctypeslib.as_array(pointer, shape=(self._llm.n_vocab(),)).argmax())
        self._one.id, self._one.logit, self._one.p = llama_cpp.llama_token(token), 0.0, 0.0
        llama_cpp.llama_sampler_apply(self._grammar, ctypes.byref(self._asked))
        if self._one.logit == -math.inf:  # refused: the whole vocabulary, as create_completion does
            self.refusals += 1
            return int(llama_cpp.llama_sampler_sample(self._chain, self._llm.ctx, -1))  # takes the token too
        llama_cpp.llama_sampler_accept(self._chain, token)
        return token

    def close(self) -> None:
        import llama_cpp

        llama_cpp.llama_sampler_free(self._chain)


def write_greedy(llm: llama_cpp.Llama, grammar: LlamaGrammar, prompt: list[int], max_tokens: int,
                 seed: int | None) -> Written:
    """create_completion's reply at temperature 0 to ``prompt``, which the context holds, read last.

    ``max_tokens`` is positive (a :class:`~localeval.backends.base.JsonRequest`'s).
    """
    import llama_cpp

    # create_completion's seed: unused by greedy, but the next seedless sampling starts from it.
    llm.set_seed(seed if seed is not None else random.Random(llm._seed).randint(0, 2**32))
    max_tokens = min(max_tokens, llm.n_ctx() - len(prompt))  # as create_completion caps it
    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    written: list[int] = []
    unfinished = 0  # bytes of a UTF-8 character still to come, as create_completion counts them
    chooser = GrammarGreedy(llm, grammar)
    try:
        while True:
            token = chooser.next_token()
            if llama_cpp.llama_vocab_is_eog(vocab, token):
                return _written(llm, prompt, written, "stop", chooser.refusals)
            written.append(token)
            unfinished = _unfinished_utf8(llm.detokenize(written, prev_tokens=prompt)[-3:], unfinished)
            if unfinished > 0:
                unfinished -= 1
            elif len(written) >= max_tokens:
                return _written(llm, prompt, written, "length", chooser.refusals)
            llm.eval([token])
    finally:
        chooser.close()


def _written(llm: llama_cpp.Llama, prompt: list[int], written: list[int], finish_reason: Literal["stop", "length"],
             refusals: int) -> Written:
    text = llm.detokenize(written, prev_tokens=prompt).decode("utf-8", errors="ignore")
    return Written(text, finish_reason, len(written), refusals)


def _unfinished_utf8(tail: bytes, unfinished: int) -> int:
    """create_completion's count of the bytes still to come of a character begun in ``tail``
    (the text's last three bytes), or ``unfinished`` where no lead byte there says otherwise."""
    for index, byte in enumerate(tail):
        place = 3 - index  # as create_completion counts, also when the text is shorter than three bytes
        for length, lead in ((2, 0xC0), (3, 0xE0), (4, 0xF0)):
            if length > place and byte & lead == lead:
                unfinished = length - place
    return unfinished
