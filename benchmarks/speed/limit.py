"""The physical limit of judging a case: what the model must do at the very least, timed.

A judge must read every token of the text it judges at least once: the article
and the summary. The limit of a case is the time of ONE forward pass over those
tokens (BOS + article + blank line + summary; no instructions, no template),
with llama.cpp in this process (``llama_cpp.Llama``, the benchmark's threads,
llama.cpp's default batch of 512, no logits for every position). For
faithfulness and answer relevancy a judge must also write its verdicts: the
limit adds the decode time of the shortest reply their schema accepts,
``{"verdicts":["yes",...]}`` with one verdict per sentence of the summary (a
stand-in for its claims or statements), at the decode speed measured right
after that forward pass (:data:`DECODE_PROBE` greedy tokens, one at a time).

The same pass is also timed with localeval's batch size (64), to separate what
the batch size costs from what localeval's prompts cost.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np

#: Greedy tokens generated to time decoding.
DECODE_PROBE = 16
#: localeval's in-process batch size (LlamaCppOptions.n_batch).
LOCALEVAL_BATCH = 64


class PhysicalLimit:
    """Two llama.cpp contexts on the judge model: batch 512 (the limit) and localeval's 64."""

    def __init__(self, model: Path, threads: int, n_ctx: int = 4096) -> None:
        import llama_cpp

        self._llama_cpp = llama_cpp
        self.llm = self._open(model, threads, n_ctx, 512)
        self.llm_small_batch = self._open(model, threads, n_ctx, LOCALEVAL_BATCH)

    def _open(self, model: Path, threads: int, n_ctx: int, n_batch: int) -> Any:
        return self._llama_cpp.Llama(model_path=str(model), n_ctx=n_ctx, n_batch=n_batch, n_threads=threads,
                                     n_threads_batch=threads, logits_all=False, verbose=False)

    def text_tokens(self, case: dict[str, Any]) -> list[int]:
        """BOS + article + blank line + summary: every token a judge must read."""
        article = self.llm.tokenize(case["input"].encode(), add_bos=True, special=False)
        summary = self.llm.tokenize(("\n\n" + case["actual_output"]).encode(), add_bos=False, special=False)
        return article + summary

    def verdict_tokens(self, case: dict[str, Any]) -> int:
        """Tokens of the shortest valid verdicts reply for this case's summary."""
        reply = json.dumps({"verdicts": ["yes"] * case["summary_sentences"]}, separators=(",", ":"))
        return len(self.llm.tokenize(reply.encode(), add_bos=False, special=False))

    def measure(self, case: dict[str, Any]) -> dict[str, Any]:
        """The limit's figures for one case (seconds and tokens)."""
        tokens = self.text_tokens(case)
        forward = _timed_read(self.llm, tokens)
        start = time.perf_counter()
        for _ in range(DECODE_PROBE):
            self.llm.eval([self._greedy(self.llm)])
        per_token = (time.perf_counter() - start) / DECODE_PROBE
        verdicts = self.verdict_tokens(case)
        return {
            "text_tokens": len(tokens),
            "forward_s": forward,
            "forward_batch64_s": _timed_read(self.llm_small_batch, tokens),
            "decode_s_per_token": per_token,
            "verdict_tokens": verdicts,
            "verdicts_s": verdicts * per_token,
        }

    def _greedy(self, llm: Any) -> int:
        pointer = self._llama_cpp.llama_get_logits_ith(llm.ctx, -1)
        return int(np.ctypeslib.as_array(pointer, shape=(llm.n_vocab(),)).argmax())

    def close(self) -> None:
        self.llm.close()
        self.llm_small_batch.close()


def _timed_read(llm: Any, tokens: list[int]) -> float:
    llm.reset()  # a cold read: nothing of a previous prompt reused
    start = time.perf_counter()
    llm.eval(tokens)
    return time.perf_counter() - start
