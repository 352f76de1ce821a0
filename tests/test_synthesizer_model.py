"""The synthesizer with the real default model: its tokenizer cuts the chunks, and
`localeval synthesize` in a subprocess writes goldens that load, then answers a rerun from the cache.

The 135M model's inputs are poor; what is checked is the mechanism: constrained replies
that always parse, G-Eval's probability-weighted filter, provenance, and the cache.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from command_line import localeval

from localeval.data.dataset import Dataset
from localeval.synthesizer.documents import judge_token_counter, read_document, split_into_chunks

ROOT = Path(__file__).resolve().parent.parent
TEA = ROOT / "examples" / "synthesize" / "docs" / "tea.md"
DOC = "# Tea\n\nGreen tea is brewed at 80 degrees Celsius; boiling water makes it bitter.\n"


@pytest.mark.model
def test_chunks_are_counted_by_the_judges_own_tokenizer(llama_backend):
    count, name = judge_token_counter(llama_backend)
    assert name == "llama.cpp tokenizer of smollm2-135m-instruct"
    chunks = split_into_chunks(read_document(TEA), 80, 10, count)
    # each chunk's size, summed word by word, is the tokenizer's count of the whole chunk
    assert [(c.tokens, llama_backend.count_tokens(c.text)) for c in chunks] == [(75, 75), (78, 78), (73, 73)]


@pytest.mark.model
def test_synthesize_writes_goldens_that_load_and_a_rerun_makes_no_model_call(tmp_path):
    doc = tmp_path / "tea.md"
    doc.write_text(DOC)
    env = {"LOCALEVAL_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "200"}
    args = ("synthesize", str(doc), "--out", str(tmp_path / "goldens.jsonl"), "--threads", "1",
            "--inputs-per-context", "1", "--threshold", "0")
    first = localeval(*args, env=env)
    assert first.returncode == 0, first.stderr
    # the quality filter's steps once; per context: the inputs; per input: its score and expected output
    assert "1 goldens from 1 documents" in first.stdout
    assert "0 of 1 inputs filtered out (0%)" in first.stdout
    assert "4 model calls, 0 from cache" in first.stdout
    written = (tmp_path / "goldens.jsonl").read_text()
    [case] = Dataset.load(tmp_path / "goldens.jsonl").cases
    assert case.actual_output is None and case.input and case.expected_output
    assert case.context == [DOC.strip()]
    assert case.metadata["source_files"] == [str(doc)] and case.metadata["chunk_ids"] == [f"{doc}#0"]
    quality = case.metadata["quality"]
    assert quality["method"] == "logprobs" and 1 <= quality["raw_score"] <= 5
    assert quality["score"] == pytest.approx((quality["raw_score"] - 1) / 4)

    second = localeval(*args, env=env)
    assert second.returncode == 0, second.stderr
    assert "0 model calls, 4 from cache" in second.stdout
    assert (tmp_path / "goldens.jsonl").read_text() == written


def test_an_empty_document_exits_2_naming_it_before_any_judge_is_loaded(tmp_path):
    good, empty = tmp_path / "good.md", tmp_path / "empty.txt"
    good.write_text(DOC)
    empty.write_text("\n")
    # a judge that cannot be reached: had it been tried, the error would be about it
    result = localeval("synthesize", str(good), str(empty), "--out", str(tmp_path / "g.jsonl"),
                       "--backend", "ollama", "--model", "m", "--base-url", "http://127.0.0.1:9")
    assert result.returncode == 2
    assert re.sub(r"\s+", " ", result.stderr).strip() == f"error: {empty}: the document is empty"
    assert not (tmp_path / "g.jsonl").exists()


def test_an_unknown_synthesizer_option_on_the_command_line_exits_2(tmp_path):
    doc = tmp_path / "tea.md"
    doc.write_text(DOC)
    result = localeval("synthesize", str(doc), "--out", str(tmp_path / "g.jsonl"), "--evolution", "deeper")
    assert result.returncode == 2
    assert "command line: synthesizer.evolutions.0: Input should be 'reasoning'" in result.stderr
