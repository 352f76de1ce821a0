"""The synthesizer with a scripted judge: chunking with exact numbers, grouping, the prompts sent,
the quality filter's arithmetic, caching, the goldens file, and bad input."""

from __future__ import annotations

import math

import pytest

from localeval.backends.cache import CachedBackend, open_cache
from localeval.config import RunConfig
from localeval.data.dataset import Dataset
from localeval.errors import ConfigError, DatasetError, SchemaViolation
from localeval.synthesizer import Context, Document, Synthesizer, SynthesizerOptions, read_document, save_goldens
from localeval.synthesizer.contexts import group_chunks, jaccard, spread, word_set
from localeval.synthesizer.documents import Chunk, approximate_tokens, split_into_chunks
from localeval.synthesizer.generation import INPUT_CHARS, INPUT_MIN_CHARS, evolutions_for, inputs_schema
from localeval.testing import ScriptedJudge


def words(text: str) -> int:
    """A token counter for exact tests: one token a word."""
    return len(text.split())


def chunk_texts(text: str, size: int, overlap: int) -> list[tuple[str, int]]:
    return [(c.text, c.tokens) for c in split_into_chunks(Document("d.txt", text), size, overlap, words)]


# -- chunking ---------------------------------------------------------------------------


def test_approximate_tokens_is_a_quarter_of_each_words_characters_rounded_up():
    assert approximate_tokens("Hello, world! a") == 2 + 2 + 1
    assert approximate_tokens("  \n ") == 0


def test_a_chunk_ends_at_a_sentence_end_that_keeps_it_half_full():
    text = "One two three. Four five six seven. Eight nine."
    assert chunk_texts(text, 5, 2) == [
        ("One two three.", 3),  # the sentence end at 3 words keeps 3 of 5: at least half
        ("two three. Four five six", 5),  # no sentence end keeps it half full: cut at a word
        ("five six seven. Eight nine.", 5),
    ]


def test_the_overlap_starts_at_a_sentence_start_within_it():
    assert chunk_texts("Aa bb. Cc dd ee ff gg hh ii.", 5, 3) == [
        ("Aa bb. Cc dd ee", 5),
        ("Cc dd ee ff gg", 5),  # the 3-word overlap starts at the sentence "Cc ..."
        ("ee ff gg hh ii.", 5),
    ]


def test_without_overlap_chunks_partition_the_words():
    text = " ".join(f"w{i}" for i in range(10))
    assert chunk_texts(text, 4, 0) == [("w0 w1 w2 w3", 4), ("w4 w5 w6 w7", 4), ("w8 w9", 2)]


def test_a_blank_line_ends_a_sentence_and_a_word_longer_than_a_chunk_stands_alone():
    assert chunk_texts("# Title\n\nBody text here", 3, 0) == [("# Title", 2), ("Body text here", 3)]
    long = Document("d.txt", "a " + "x" * 40 + " b")
    assert [c.tokens for c in split_into_chunks(long, 4, 0, approximate_tokens)] == [1, 10, 1]


# -- contexts ---------------------------------------------------------------------------


def chunks(source: str, *texts: str) -> list[Chunk]:
    return [Chunk(source, i, t, words(t)) for i, t in enumerate(texts)]


def test_adjacent_grouping_takes_windows_of_one_document_spread_evenly():
    a = chunks("a.md", "a0", "a1", "a2", "a3", "a4", "a5", "a6")
    b = chunks("b.md", "b0")
    contexts = group_chunks([a, b], "adjacent", 2, 2)
    assert [c.chunk_ids for c in contexts] == [["a.md#0", "a.md#1"], ["a.md#4", "a.md#5"], ["b.md#0"]]
    assert spread([0, 1, 2, 3], 3) == [0, 1, 2] and spread([0, 1, 2, 3, 4, 5], 3) == [0, 2, 4]


def test_lexical_grouping_adds_the_chunks_sharing_most_words_from_any_document():
    a = chunks("a.md", "green tea brewing water", "bicycle chain oil")
    b = chunks("b.md", "black tea brewing water milk", "chain stretch checker")
    contexts = group_chunks([a, b], "lexical", 2, 5)
    assert [c.chunk_ids for c in contexts] == [
        ["a.md#0", "b.md#0"], ["a.md#1", "b.md#1"], ["b.md#0", "a.md#0"], ["b.md#1", "a.md#1"],
    ]
    assert contexts[0].sources == ["a.md", "b.md"]
    assert jaccard(word_set("green tea brewing water"), word_set("black tea brewing water milk")) == 3 / 6


# -- generation, filtering, goldens -----------------------------------------------------

STEPS = {"steps": ["Read the input.", "Check the context answers it."]}
CONTEXT = ["Green tea is brewed at 80 degrees.", "Black tea is brewed at 95 degrees."]


def score_logprobs(**probabilities: float) -> dict[str, float]:
    return {str(s): math.log(probabilities.get(f"p{s}", 0.0)) if probabilities.get(f"p{s}") else -math.inf
            for s in range(1, 6)}


def scripted_judge() -> ScriptedJudge:
    judge = ScriptedJudge(
        json_values=[
            STEPS,
            {"inputs": ["At what temperature is green tea brewed?", "Which tea is brewed hotter?"]},
            {"input": "Why would green tea turn bitter with boiling water?"},
            {"expected_output": "At 80 degrees; hotter water makes it bitter."},
            {"input": "If black tea were brewed at 80 degrees, which tea is hotter?"},
        ],
        logprobs=[score_logprobs(p4=0.5, p5=0.5), score_logprobs(p1=0.5, p2=0.5)],
    )
    return judge


OPTIONS = SynthesizerOptions(inputs_per_context=2, evolutions=("reasoning", "hypothetical"))
#: The second input of scripted_judge's context, dropped by the filter: its record in the rejected file.
REJECTED = {
    "name": "context-0-1.2", "input": "If black tea were brewed at 80 degrees, which tea is hotter?",
    "context": CONTEXT, "source_files": ["context-0"], "chunk_ids": ["context-0#0", "context-0#1"],
    "evolutions": ["hypothetical"], "filter": "quality",
    "reason": "quality score 1.5 on 1-5, 0.125 on 0-1, below the threshold 0.5",  # p(1) = p(2) = 0.5
    "quality": {"score": 0.125, "raw_score": 1.5, "score_range": [1, 5], "threshold": 0.5, "method": "logprobs"},
}


def test_inputs_are_evolved_scored_by_geval_and_kept_or_dropped_at_the_threshold():
    judge = scripted_judge()
    events = []
    synthesis = Synthesizer(judge, OPTIONS, events.append).from_contexts([CONTEXT])
    assert judge.json_values == [] and judge.logprobs == []
    [golden] = synthesis.goldens
    assert golden.input == "Why would green tea turn bitter with boiling water?"
    assert golden.expected_output == "At 80 degrees; hotter water makes it bitter."
    assert golden.context == CONTEXT
    assert golden.name == "context-0-1.1"
    assert golden.metadata == {
        "source_files": ["context-0"], "chunk_ids": ["context-0#0", "context-0#1"], "evolutions": ["reasoning"],
        # p(4) = p(5) = 0.5: 4.5 on 1-5, 0.875 on 0-1
        "quality": {"score": 0.875, "raw_score": 4.5, "score_range": [1, 5], "threshold": 0.5, "method": "logprobs"},
    }
    [rejected] = synthesis.rejected
    assert rejected.input == "If black tea were brewed at 80 degrees, which tea is hotter?"
    assert rejected.score == pytest.approx(0.125)  # 1.5 on 1-5
    assert rejected.record() == REJECTED
    assert synthesis.errors == [] and synthesis.contexts == 1
    assert [(e.done, e.total, e.kept, e.filtered, e.errors) for e in events] == [(1, 1, 1, 1, 0)]


def test_the_prompts_sent_carry_the_context_the_count_the_styling_and_the_evolution():
    judge = scripted_judge()
    styled = OPTIONS.model_copy(update={"styling": OPTIONS.styling.model_copy(update={"task": "tea support"})})
    Synthesizer(judge, styled).from_contexts([CONTEXT])
    steps, inputs, evolve, score, expected, evolve2, score2 = judge.requests
    assert inputs.json_schema == inputs_schema(2)
    assert inputs.json_schema["properties"]["inputs"]["items"] == {
        "type": "string", "minLength": INPUT_MIN_CHARS, "maxLength": INPUT_CHARS
    }
    assert (inputs.temperature, inputs.seed, inputs.max_tokens) == (0.0, 0, 32 + 2 * (INPUT_CHARS + 16))
    user = inputs.messages[-1].content
    assert user.startswith("The application's task: tea support\nContext:\n[1] Green tea is brewed at 80 degrees.\n")
    assert "Write 2 different inputs: questions a user could ask." in user
    assert "several steps of reasoning" in evolve.messages[-1].content
    assert "Input: At what temperature is green tea brewed?" in evolve.messages[-1].content
    assert "what would follow if a fact of the context were different" in evolve2.messages[-1].content
    # G-Eval's own score prompt, on the input and its context
    assert "Input:\nWhy would green tea turn bitter with boiling water?" in score.messages[-1].content
    assert "Context:\n" in score.messages[-1].content and score.prefill == "Score: "
    assert "Input: Why would green tea turn bitter" in expected.messages[-1].content
    assert score2.candidates == ("1", "2", "3", "4", "5")


def test_evolutions_go_round_robin_starting_one_further_per_input():
    options = SynthesizerOptions(evolutions=("reasoning", "comparison", "hypothetical"), evolution_rounds=2)
    assert [evolutions_for(i, options) for i in range(3)] == [
        ["reasoning", "comparison"], ["comparison", "hypothetical"], ["hypothetical", "reasoning"],
    ]
    assert evolutions_for(0, SynthesizerOptions()) == []


def test_without_filter_or_expected_output_only_inputs_are_asked():
    judge = ScriptedJudge(json_values=[{"inputs": ["What is brewed at 80 degrees?"]}])
    options = SynthesizerOptions(inputs_per_context=1, quality_filter=False, expected_output=False)
    [golden] = Synthesizer(judge, options).from_contexts([CONTEXT]).goldens
    assert golden.expected_output is None and "quality" not in golden.metadata
    assert len(judge.requests) == 1


def test_a_failed_step_is_that_contexts_error_and_the_next_context_goes_on():
    judge = ScriptedJudge(json_values=[
        SchemaViolation("bad json"), {"inputs": ["What is brewed at 80 degrees?"]},
    ])
    options = SynthesizerOptions(inputs_per_context=1, quality_filter=False, expected_output=False)
    synthesis = Synthesizer(judge, options).from_contexts([["first context"], CONTEXT])
    assert synthesis.errors == ["context 1 (context-0#0): inputs: SchemaViolation: bad json"]
    assert [g.input for g in synthesis.goldens] == ["What is brewed at 80 degrees?"]


def test_a_second_run_through_the_cache_makes_no_model_call_and_gives_the_same_goldens(tmp_path):
    with open_cache(tmp_path / "cache") as store:
        first_judge = CachedBackend(scripted_judge(), store)
        first = Synthesizer(first_judge, OPTIONS).from_contexts([CONTEXT])
        second_judge = CachedBackend(ScriptedJudge(), store)  # nothing scripted: any model call fails
        second = Synthesizer(second_judge, OPTIONS).from_contexts([CONTEXT])
    assert first_judge.stats.model_calls == 7
    assert (second_judge.stats.model_calls, second_judge.stats.hits) == (0, 7)
    assert second.goldens == first.goldens and second.rejected == first.rejected


def test_goldens_from_documents_record_their_file_and_chunks_and_load_as_a_dataset(tmp_path):
    doc = tmp_path / "tea.md"
    doc.write_text("# Tea\n\nGreen tea is brewed at 80 degrees. Black tea is brewed at 95 degrees.\n")
    judge = ScriptedJudge(json_values=[{"inputs": ["At what temperature is green tea brewed?"]}])
    options = SynthesizerOptions(inputs_per_context=1, quality_filter=False, expected_output=False)
    synthesis = Synthesizer(judge, options).from_documents([doc])
    assert synthesis.tokenizer == "approximate: 4 characters per token"  # a scripted judge has no tokenizer
    save_goldens(synthesis.goldens, tmp_path / "goldens.jsonl")
    dataset = Dataset.load(tmp_path / "goldens.jsonl")
    [case] = dataset.cases
    assert case.actual_output is None and case.input == "At what temperature is green tea brewed?"
    assert case.metadata == {"source_files": [str(doc)], "chunk_ids": [f"{doc}#0"]}
    assert case.context == ["# Tea\n\nGreen tea is brewed at 80 degrees. Black tea is brewed at 95 degrees."]


def test_contexts_given_as_context_objects_keep_their_chunk_ids():
    context = Context((Chunk("manual.pdf", 3, "Press the red button.", 4),))
    judge = ScriptedJudge(json_values=[{"inputs": ["What does the red button do?"]}])
    options = SynthesizerOptions(inputs_per_context=1, quality_filter=False, expected_output=False)
    [golden] = Synthesizer(judge, options).from_contexts([context]).goldens
    assert golden.metadata == {"source_files": ["manual.pdf"], "chunk_ids": ["manual.pdf#3"]}


# -- bad input and options --------------------------------------------------------------


def pdf_with_text(text: str) -> bytes:
    """A one-page PDF showing ``text`` in Helvetica, written by hand (offsets computed)."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def test_a_pdfs_text_is_read(tmp_path):
    path = tmp_path / "tea.pdf"
    path.write_bytes(pdf_with_text("Green tea is brewed at 80 degrees."))
    assert read_document(path).text == "Green tea is brewed at 80 degrees."


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("empty.md", b"", "the document is empty"),
        ("blank.txt", b"  \n\n ", "the document is empty"),
        ("latin1.txt", "caf\u00e9".encode("latin-1"), "not UTF-8 text (byte 3)"),
        ("notes.docx", b"x", "cannot read .docx: give .txt, .md, .markdown, .pdf"),
        ("broken.pdf", b"%PDF-1.4 garbage", "not a readable PDF"),
        ("blank.pdf", pdf_with_text(""), "no text could be extracted (a scanned PDF?)"),
    ],
)
def test_a_bad_document_is_one_error_naming_the_file(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(DatasetError) as error:
        read_document(path)
    assert str(error.value).startswith(f"{path}: {message}")


def test_a_missing_document_is_an_error_naming_it(tmp_path):
    with pytest.raises(DatasetError, match=r"missing\.md: cannot read \(No such file or directory\)"):
        read_document(tmp_path / "missing.md")


def test_the_synthesizer_table_is_checked_key_by_key(tmp_path):
    config = tmp_path / "eval.toml"
    config.write_text("[synthesizer]\nchunk_size = 100\n[synthesizer.styling]\ntask = 'support'\n")
    loaded = RunConfig.load(config)
    assert loaded.synthesizer.chunk_size == 100 and loaded.synthesizer.styling.task == "support"
    for body, message in [
        ("chunk_sise = 100", "synthesizer: unknown key 'chunk_sise' (did you mean 'chunk_size' or 'chunk_overlap'?"),
        ("chunk_size = 50\nchunk_overlap = 50", "synthesizer: chunk_overlap (50) must be below chunk_size (50)"),
        ("evolutions = ['deeper']", "synthesizer.evolutions.0: Input should be 'reasoning'"),
    ]:
        config.write_text(f"[synthesizer]\n{body}\n")
        with pytest.raises(ConfigError) as error:
            RunConfig.load(config)
        assert str(error.value).startswith(f"{config}: {message}"), str(error.value)


def test_from_documents_reads_every_document_before_any_judge_call(tmp_path):
    good = tmp_path / "good.md"
    good.write_text("Some text.")
    judge = ScriptedJudge()
    with pytest.raises(DatasetError, match="empty.md: the document is empty"):
        (tmp_path / "empty.md").write_text("")
        Synthesizer(judge).from_documents([good, tmp_path / "empty.md"])
    assert judge.requests == []


def test_command_line_options_go_on_top_of_the_config_table():
    from localeval.cli.synthesize import options_from_cli

    config = RunConfig.model_validate(
        {"synthesizer": {"chunk_size": 100, "context_size": 3, "styling": {"input_format": "a question"}}}
    )
    options = options_from_cli(config, {"chunk_size": None, "context_size": 1, "evolutions": ["comparison"]},
                               {"task": "support", "scenario": None})
    assert (options.chunk_size, options.context_size, options.evolutions) == (100, 1, ("comparison",))
    assert (options.styling.input_format, options.styling.task) == ("a question", "support")
    with pytest.raises(ConfigError, match="command line: synthesizer.chunk_overlap: Input should be greater"):
        options_from_cli(config, {"chunk_overlap": -1}, {})


def test_the_progress_bar_shows_contexts_done_and_goldens_kept_on_a_terminal():
    import io

    from rich.console import Console

    from localeval.cli.synthesize import synthesis_progress
    from localeval.synthesizer import ContextDone

    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=120)
    with synthesis_progress(console) as listen:
        listen(ContextDone(done=2, total=3, kept=3, filtered=1, errors=0))
    shown = buffer.getvalue()
    assert "synthesizing" in shown and "2/3" in shown and "3 kept" in shown and "1 filtered" in shown
    quiet = Console(file=io.StringIO(), force_terminal=False)
    with synthesis_progress(quiet) as listen:
        listen(ContextDone(done=1, total=1, kept=0, filtered=0, errors=0))
    assert quiet.file.getvalue() == ""


# -- what the filter dropped, kept beside the goldens --------------------------------------


def synthesize_command(tmp_path, judge, monkeypatch, options=OPTIONS):
    """``localeval synthesize`` (its glue, in this process) over one document with ``judge``: (exit code, stdout)."""
    import io

    from rich.console import Console

    from localeval.cli import synthesize as synthesis
    from localeval.config import CacheConfig
    from localeval.paths import Paths

    doc = tmp_path / "tea.md"
    doc.write_text("\n\n".join(CONTEXT) + "\n")
    monkeypatch.setattr(synthesis, "load_judge", lambda *args: CachedBackend(judge, None))
    out = Console(file=io.StringIO(), width=300)
    config = RunConfig(cache=CacheConfig(enabled=False))
    code = synthesis.synthesize([doc], tmp_path / "goldens.jsonl", config, options, Paths(home=tmp_path / "home", cache=tmp_path / "cache"),
                                out, Console(file=io.StringIO()), {})
    return code, out.file.getvalue()


def test_synthesize_writes_the_rejected_inputs_beside_the_goldens_with_why(tmp_path, monkeypatch):
    import json

    from localeval.synthesizer import rejected_path

    code, shown = synthesize_command(tmp_path, scripted_judge(), monkeypatch)
    assert code == 0
    assert rejected_path(tmp_path / "goldens.jsonl") == tmp_path / "goldens.rejected.jsonl"
    lines = (tmp_path / "goldens.rejected.jsonl").read_text().splitlines()
    doc = str(tmp_path / "tea.md")
    # One document of one chunk: the context is its text, named after the file.
    expected = {**REJECTED, "name": "tea-1.2", "context": ["\n\n".join(CONTEXT)], "source_files": [doc],
                "chunk_ids": [f"{doc}#0"]}
    assert [json.loads(line) for line in lines] == [expected]
    assert [c.input for c in Dataset.load(tmp_path / "goldens.jsonl").cases] == [
        "Why would green tea turn bitter with boiling water?"]
    assert f"Rejected: {tmp_path / 'goldens.rejected.jsonl'} (1 inputs, each with its filter and why)" in shown


def test_with_nothing_rejected_the_rejected_file_is_empty_not_an_earlier_runs(tmp_path, monkeypatch):
    (tmp_path / "goldens.rejected.jsonl").write_text('{"input": "from an earlier run"}\n')
    judge = ScriptedJudge(json_values=[{"inputs": ["What is brewed at 80 degrees?"]}])
    options = SynthesizerOptions(inputs_per_context=1, quality_filter=False, expected_output=False)
    code, shown = synthesize_command(tmp_path, judge, monkeypatch, options)
    assert code == 0
    assert (tmp_path / "goldens.rejected.jsonl").read_text() == ""
    assert "(0 inputs, each with its filter and why)" in shown
