"""Loading and saving datasets: exact values, exact error locations."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from localeval.data.case import TestCase, ToolCall
from localeval.data.dataset import Dataset
from localeval.errors import DatasetError


def write(path: Path, text: str, encoding: str = "utf-8") -> Path:
    path.write_bytes(text.encode(encoding))
    return path


def load_error(path: Path, **options: object) -> DatasetError:
    with pytest.raises(DatasetError) as info:
        Dataset.load(path, **options)  # type: ignore[arg-type]
    return info.value


def assert_error(
    err: DatasetError, path: Path | str, line: int | None, field: str | None, text: str
) -> None:
    assert (err.path, err.line, err.field) == (str(path), line, field)
    assert text in err.detail


FULL = TestCase(
    input="What is 2+2?",
    actual_output="4",
    expected_output="Four",
    context=["2+2=4", "arithmetic"],
    retrieval_context=["doc one"],
    tools_called=[ToolCall(name="calculator")],
    expected_tools=[ToolCall(name="calculator"), ToolCall(name="search")],
    name="sum",
    tags=["math", "easy"],
    metadata={"difficulty": 1, "source": "hand"},
)


# --- loading each format ---------------------------------------------------------------


def test_jsonl_loads_all_field_types_and_skips_blank_lines(tmp_path: Path) -> None:
    record = {
        "input": "What is 2+2?",
        "actual_output": "4",
        "expected_output": "Four",
        "context": ["2+2=4", "arithmetic"],
        "retrieval_context": ["doc one"],
        "tools_called": ["calculator"],
        "expected_tools": [{"name": "calculator"}, "search"],
        "name": "sum",
        "tags": ["math", "easy"],
        "metadata": {"difficulty": 1, "source": "hand"},
    }
    path = write(tmp_path / "d.jsonl", "\n" + json.dumps(record) + "\n\n  \n" + '{"input": "b"}\n')
    data = Dataset.load(path)
    assert data.cases == [FULL, TestCase(input="b")]
    assert data.locations == [f"{path}:2", f"{path}:5"]
    assert len(data) == 2
    assert list(data) == data.cases


def test_jsonl_accepts_crlf_line_ends(tmp_path: Path) -> None:
    path = write(tmp_path / "d.jsonl", '{"input": "a"}\r\n\r\n{"input": "b"}\r\n')
    data = Dataset.load(path)
    assert data.cases == [TestCase(input="a"), TestCase(input="b")]
    assert data.locations == [f"{path}:1", f"{path}:3"]


def test_json_gives_each_record_its_starting_line(tmp_path: Path) -> None:
    text = '[\n  {\n    "input": "a",\n    "tags": ["x"]\n  },\n\n'
    text += '  {"input": "b"}, {"input": "c"}\n]\n'
    path = write(tmp_path / "d.json", text)
    data = Dataset.load(path)
    assert data.cases == [TestCase(input="a", tags=["x"]), TestCase(input="b"), TestCase(input="c")]
    assert data.locations == [f"{path}:2", f"{path}:7", f"{path}:7"]


def test_json_empty_list_is_an_empty_dataset(tmp_path: Path) -> None:
    assert len(Dataset.load(write(tmp_path / "d.json", " [ ] \n"))) == 0


def test_csv_loads_all_field_types(tmp_path: Path) -> None:
    text = (
        "input,actual_output,expected_output,context,retrieval_context,tools_called,"
        "expected_tools,name,tags,metadata\n"
        'What is 2+2?,4,Four, 2+2=4 | arithmetic |,doc one,calculator,calculator|search,sum,'
        'math|easy,"{""difficulty"": 1, ""source"": ""hand""}"\n'
        "b,,,,,,,,,\n"
    )
    path = write(tmp_path / "d.csv", text)
    data = Dataset.load(path)
    assert data.cases == [FULL, TestCase(input="b")]
    assert data.cases[1].context is None
    assert data.cases[1].tags == []
    assert data.cases[1].metadata == {}
    assert data.locations == [f"{path}:2", f"{path}:3"]


def test_csv_multiline_cell_gives_the_next_record_its_real_line(tmp_path: Path) -> None:
    text = 'input,actual_output\r\n"one\r\ntwo\nthree",x\r\n\r\nnext,y\r\n"q","a\nb"\n'
    path = write(tmp_path / "d.csv", text)
    data = Dataset.load(path)
    assert [c.input for c in data] == ["one\r\ntwo\nthree", "next", "q"]
    assert data.cases[2].actual_output == "a\nb"
    assert data.locations == [f"{path}:2", f"{path}:6", f"{path}:7"]


def test_csv_error_after_multiline_cell_names_the_right_line(tmp_path: Path) -> None:
    path = write(tmp_path / "d.csv", 'input,tags\n"a\nb\nc",t\n,t\n')
    assert_error(load_error(path), path, 5, "input", "required")


def test_csv_skips_rows_of_empty_cells(tmp_path: Path) -> None:
    path = write(tmp_path / "d.csv", "input,tags\n,\n\nq,t\n")
    data = Dataset.load(path)
    assert data.cases == [TestCase(input="q", tags=["t"])]
    assert data.locations == [f"{path}:4"]


def test_csv_short_row_fills_empty_cells(tmp_path: Path) -> None:
    path = write(tmp_path / "d.csv", "input,actual_output,tags\nq\n")
    assert Dataset.load(path).cases == [TestCase(input="q")]


def test_list_delimiter_is_configurable(tmp_path: Path) -> None:
    path = write(tmp_path / "d.csv", "input,context,tags\nq,a|b;c, x ; y\n")
    case = Dataset.load(path, list_delimiter=";").cases[0]
    assert case.context == ["a|b", "c"]
    assert case.tags == ["x", "y"]


def test_explicit_format_overrides_the_extension(tmp_path: Path) -> None:
    path = write(tmp_path / "d.txt", '{"input": "q"}\n')
    assert Dataset.load(path, format="jsonl").cases == [TestCase(input="q")]


@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".csv"])
def test_utf8_bom_is_ignored(tmp_path: Path, suffix: str) -> None:
    body = {".jsonl": '{"input": "é"}\n', ".json": '[{"input": "é"}]', ".csv": "input\né\n"}
    path = write(tmp_path / f"d{suffix}", body[suffix], encoding="utf-8-sig")
    data = Dataset.load(path)
    assert data.cases == [TestCase(input="é")]
    assert data.locations == [f"{path}:{2 if suffix == '.csv' else 1}"]


def test_from_cases_locates_cases_in_memory() -> None:
    data = Dataset.from_cases(iter([TestCase(input="a"), TestCase(input="b")]))
    assert data.locations == ["<memory>:1", "<memory>:2"]


def test_dataset_rejects_unparallel_lists() -> None:
    with pytest.raises(ValueError):
        Dataset([TestCase(input="a")], [])


# --- key mapping and unknown keys ------------------------------------------------------


def test_mapping_renames_keys_in_jsonl_and_csv(tmp_path: Path) -> None:
    jsonl = write(tmp_path / "d.jsonl", '{"query": "q", "answer": "a"}\n')
    csv_ = write(tmp_path / "d.csv", "query,answer\nq,a\n")
    fields = {"query": "input", "answer": "actual_output"}
    expected = [TestCase(input="q", actual_output="a")]
    assert Dataset.load(jsonl, fields=fields).cases == expected
    assert Dataset.load(csv_, fields=fields).cases == expected


def test_mapping_can_rename_a_field_name_away(tmp_path: Path) -> None:
    path = write(tmp_path / "d.jsonl", '{"input": "raw prompt", "q": "question"}\n')
    case = Dataset.load(path, fields={"input": "expected_output", "q": "input"}).cases[0]
    assert case == TestCase(input="question", expected_output="raw prompt")


def test_mapping_to_a_non_field_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path / "d.jsonl", '{"query": "q"}\n')
    err = load_error(path, fields={"query": "inptu"})
    assert_error(err, path, None, "inptu", "maps 'query' here, but it is not a test case field")


def test_two_keys_giving_one_field_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path / "d.jsonl", '{"input": "a"}\n{"input": "b", "query": "c"}\n')
    err = load_error(path, fields={"query": "input"})
    assert_error(err, path, 2, "input", "both 'input' and 'query' give this field")


def test_two_csv_columns_giving_one_field_fail_at_the_header(tmp_path: Path) -> None:
    path = write(tmp_path / "d.csv", "input,query\na,b\n")
    err = load_error(path, fields={"query": "input"})
    assert_error(err, path, 1, "input", "both 'input' and 'query' give this field")


def test_unknown_key_is_an_error_by_default(tmp_path: Path) -> None:
    path = write(tmp_path / "d.jsonl", '{"input": "a"}\n\n{"input": "b", "score": 3}\n')
    err = load_error(path)
    assert_error(err, path, 3, "score", "not a test-case field")
    assert "--map score=FIELD" in err.detail
    assert "unknown_fields = 'metadata'" in err.detail
    assert str(err).startswith(f"{path}:3: field 'score': not a test-case field")


def test_unknown_csv_column_fails_at_the_header(tmp_path: Path) -> None:
    path = write(tmp_path / "d.csv", "input,score\na,3\n")
    assert_error(load_error(path), path, 1, "score", "not a test-case field")


def test_unknown_keys_go_to_metadata_when_asked(tmp_path: Path) -> None:
    path = write(tmp_path / "d.jsonl", '{"input": "a", "score": 3, "metadata": {"k": "v"}}\n')
    case = Dataset.load(path, unknown_fields="metadata").cases[0]
    assert case.metadata == {"k": "v", "score": 3}


def test_unknown_csv_columns_go_to_metadata_as_text(tmp_path: Path) -> None:
    path = write(tmp_path / "d.csv", 'input,score,metadata\na,3,"{""k"": 1}"\n')
    case = Dataset.load(path, unknown_fields="metadata").cases[0]
    assert case.metadata == {"k": 1, "score": "3"}


def test_unknown_key_clashing_with_metadata_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path / "d.jsonl", '{"input": "a", "k": 1, "metadata": {"k": 2}}\n')
    err = load_error(path, unknown_fields="metadata")
    assert_error(err, path, 1, "k", "also a key of metadata")


def test_unknown_keys_are_dropped_when_asked(tmp_path: Path) -> None:
    path = write(tmp_path / "d.csv", "input,score\na,3\n")
    assert Dataset.load(path, unknown_fields="ignore").cases == [TestCase(input="a")]


def test_bad_options_are_errors(tmp_path: Path) -> None:
    path = write(tmp_path / "d.csv", "input\na\n")
    err = load_error(path, unknown_fields="keep")
    assert_error(err, path, None, None, "unknown_fields must be 'error', 'metadata' or 'ignore'")
    assert_error(load_error(path, list_delimiter=""), path, None, None, "must not be empty")
    assert_error(load_error(path, format="xml"), path, None, None, "unknown format 'xml'")


# --- files that cannot be read ---------------------------------------------------------


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.jsonl"
    assert_error(load_error(path), path, None, None, "no such file")


def test_directory(tmp_path: Path) -> None:
    path = tmp_path / "dir.jsonl"
    path.mkdir()
    assert_error(load_error(path), path, None, None, "is a directory")


def test_unknown_extension(tmp_path: Path) -> None:
    path = write(tmp_path / "d.txt", "input\n")
    assert_error(load_error(path), path, None, None, "cannot tell the format from the extension")
    assert "'.txt'; pass format='jsonl', 'json' or 'csv'" in str(load_error(path))


def test_non_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_bytes(b'{"input": "a"}\n{"input": "caf\xe9"}\n')
    assert_error(load_error(path), path, 2, None, "not UTF-8 (byte 0xe9)")


# --- JSONL and JSON errors -------------------------------------------------------------


def test_malformed_jsonl_line(tmp_path: Path) -> None:
    path = write(tmp_path / "d.jsonl", '{"input": "a"}\n\n{"input": "b",}\n')
    err = load_error(path)
    assert_error(err, path, 3, None, "invalid JSON: Expecting property name enclosed in double")
    assert "(column 15)" in err.detail


def test_jsonl_line_that_is_not_an_object(tmp_path: Path) -> None:
    path = write(tmp_path / "d.jsonl", '{"input": "a"}\n["input", "b"]\n')
    assert_error(load_error(path), path, 2, None, "expected a JSON object, got a list")


def test_json_that_is_not_a_list(tmp_path: Path) -> None:
    path = write(tmp_path / "d.json", '\n{"input": "a"}\n')
    assert_error(load_error(path), path, 2, None, "expected a JSON list of objects, got an object")


def test_json_element_that_is_not_an_object_has_its_real_line(tmp_path: Path) -> None:
    path = write(tmp_path / "d.json", '[\n  {"input": "a"},\n\n  "b",\n  {"input": "c"}\n]')
    assert_error(load_error(path), path, 4, None, "expected a JSON object, got a string")


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ('[\n {"input": "a"},\n {"input": }\n]', 3, "invalid JSON: Expecting value"),
        ('[\n {"input": "a"},\n]', 3, "invalid JSON: Expecting value"),
        ('[\n {"input": "a"}\n {"input": "b"}\n]', 3, "expected ',' or ']'"),
        ('[\n {"input": "a"}', 2, "expected ',' or ']'"),
        ('[{"input": "a"}]\n\n[]', 3, "extra data after the list"),
        ("", 1, "invalid JSON: Expecting value"),
        ("\n\n{oops", 3, "invalid JSON: Expecting property name"),
    ],
)
def test_malformed_json(tmp_path: Path, text: str, line: int, message: str) -> None:
    path = write(tmp_path / "d.json", text)
    assert_error(load_error(path), path, line, None, message)


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity", "1e999"])
@pytest.mark.parametrize(
    ("name", "text", "line", "field"),
    [
        ("d.jsonl", '{"input": "a"}\n\n{"input": "b", "metadata": {"score": %s}}\n', 3, "metadata.score"),
        ("d.jsonl", '{"input": "a", "metadata": {"runs": [1, %s]}}\n', 1, "metadata.runs[1]"),
        ("d.jsonl", '{"input": "a"}\n%s\n', 2, None),
        ("d.json", '[\n {"input": "a"},\n {"input": "b",\n  "metadata": {"x": %s}}\n]', 3, "metadata.x"),
        ("d.csv", 'input,metadata\na,"{""x"": %s}"\n', 2, "metadata.x"),
    ],
)
def test_nan_and_infinity_are_refused_where_they_are(
    tmp_path: Path, token: str, name: str, text: str, line: int, field: str | None
) -> None:
    # Python's parser reads them as floats, which a report writes as null: data changed silently.
    path = write(tmp_path / name, text % token)
    problem = "is too large for a number" if token == "1e999" else "is not a JSON value"
    assert_error(load_error(path), path, line, field, f"{token} {problem}")


def test_the_words_nan_and_infinity_in_strings_are_text(tmp_path: Path) -> None:
    path = write(tmp_path / "d.jsonl", '{"input": "NaN", "metadata": {"Infinity": "-Infinity"}}\n')
    assert Dataset.load(path).cases == [TestCase(input="NaN", metadata={"Infinity": "-Infinity"})]


@pytest.mark.parametrize(
    ("name", "text", "why"),
    [
        ("d.jsonl", "", "the file is empty"),
        ("d.jsonl", "  \n\n \t\n", "the file is empty"),
        ("d.json", " [ ]\n", "the file is an empty list"),
        ("d.csv", "input,actual_output\n", "the file has only its header row"),
        ("d.csv", "input\n\n,\n", "the file has only its header row"),
    ],
)
def test_a_file_without_cases_loads_empty_and_a_run_requires_cases(
    tmp_path: Path, name: str, text: str, why: str
) -> None:
    path = write(tmp_path / name, text)
    data = Dataset.load(path)
    assert len(data) == 0
    with pytest.raises(DatasetError) as info:
        data.require_cases()
    assert str(info.value) == f"{path}: no test cases ({why})"


def test_require_cases_passes_with_a_case_and_names_no_file_for_cases_in_memory(tmp_path: Path) -> None:
    path = write(tmp_path / "cases.txt", '{"input": "a"}\n')
    Dataset.load(path, format="jsonl").require_cases("jsonl")
    with pytest.raises(DatasetError, match=r"^<dataset>: no test cases$"):
        Dataset.from_cases([]).require_cases()
    empty = write(tmp_path / "empty.txt", "[]")
    with pytest.raises(DatasetError, match=r"empty\.txt: no test cases \(the file is an empty list\)"):
        Dataset.load(empty, format="json").require_cases("json")


# --- CSV errors ------------------------------------------------------------------------


def test_csv_without_input_column_fails_before_reading_rows(tmp_path: Path) -> None:
    # The second row has too many cells; the header error must come first.
    path = write(tmp_path / "d.csv", "question,answer\nq,a\nx,y,z\n")
    err = load_error(path, unknown_fields="ignore")
    assert_error(err, path, 1, "input", "required column missing (columns: question, answer)")


def test_csv_empty_file(tmp_path: Path) -> None:
    path = write(tmp_path / "d.csv", "")
    assert_error(load_error(path), path, None, None, "empty file")


def test_csv_blank_header_line(tmp_path: Path) -> None:
    path = write(tmp_path / "d.csv", "\ninput\na\n")
    assert_error(load_error(path), path, 1, None, "no header row")


def test_csv_nameless_and_duplicate_columns(tmp_path: Path) -> None:
    nameless = write(tmp_path / "a.csv", "input,,tags\na,,\n")
    assert_error(load_error(nameless), nameless, 1, None, "column 2 has no name")
    twice = write(tmp_path / "b.csv", "input,tags,tags\na,,\n")
    assert_error(load_error(twice), twice, 1, "tags", "column appears twice")


def test_csv_row_with_extra_cells(tmp_path: Path) -> None:
    path = write(tmp_path / "d.csv", "input,name\na,b\nc,d,e\n")
    assert_error(load_error(path), path, 3, None, "row has 3 cells but the header has 2 columns")


def test_csv_empty_input_cell(tmp_path: Path) -> None:
    path = write(tmp_path / "d.csv", "input,name\na,b\n,d\n")
    assert_error(load_error(path), path, 3, "input", "required")


@pytest.mark.parametrize(
    ("cell", "message"),
    [
        ('"{""a"": }"', "invalid JSON: Expecting value"),
        ('"[1, 2]"', "must be a JSON object, got a list"),
    ],
)
def test_csv_bad_metadata(tmp_path: Path, cell: str, message: str) -> None:
    path = write(tmp_path / "d.csv", f"input,metadata\na,{{}}\nb,{cell}\n")
    assert_error(load_error(path), path, 3, "metadata", message)


# --- invalid records -------------------------------------------------------------------


def test_missing_input(tmp_path: Path) -> None:
    path = write(tmp_path / "d.jsonl", '{"input": "a"}\n{"actual_output": "b"}\n')
    assert_error(load_error(path), path, 2, "input", "required, and this record has none")


def test_string_where_a_list_is_expected(tmp_path: Path) -> None:
    path = write(tmp_path / "d.jsonl", '{"input": "a", "context": "not a list"}\n')
    assert_error(load_error(path), path, 1, "context", "must be a list, got a string")


def test_type_error_is_one_line_without_the_pydantic_dump(tmp_path: Path) -> None:
    path = write(tmp_path / "d.json", '[\n{"input": "a"},\n{"input": 5}\n]')
    err = load_error(path)
    assert_error(err, path, 3, "input", "Input should be a valid string")
    assert str(err) == f"{path}:3: field 'input': Input should be a valid string"


def test_nested_type_error_names_the_field_and_the_place(tmp_path: Path) -> None:
    path = write(tmp_path / "d.jsonl", '{"input": "a", "tools_called": ["ok", {"name": 1}]}\n')
    err = load_error(path)
    assert err.detail == "Input should be a valid string (at tools_called[1].name)"
    assert (err.line, err.field) == (1, "tools_called")


# --- saving ----------------------------------------------------------------------------

RICH = TestCase(
    input="multi\nline, with \"quotes\"",
    actual_output="  spaced  ",
    tools_called=[ToolCall(name="search", input_parameters={"q": "x"}, output={"hits": [1, None]})],
    expected_tools=[ToolCall(name="search", description="web")],
    metadata={"nested": {"a": None}, "n": 1.5},
)
PLAIN = TestCase(input="only input")


@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".csv"])
def test_round_trip(tmp_path: Path, suffix: str) -> None:
    cases = [FULL, PLAIN, TestCase(input="é\r\nx", context=["a, b", "c"], metadata={"k": [1]})]
    if suffix != ".csv":
        cases.append(RICH)
    path = tmp_path / f"d{suffix}"
    Dataset.from_cases(cases).save(path)
    assert Dataset.load(path).cases == cases
    assert os.listdir(tmp_path) == [path.name]  # no temporary file left behind


@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".csv"])
def test_empty_dataset_round_trips(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"d{suffix}"
    Dataset.from_cases([]).save(path)
    assert len(Dataset.load(path)) == 0
    assert path.read_text() == {".jsonl": "", ".json": "[]\n", ".csv": "input\n"}[suffix]


def test_round_trip_with_a_custom_delimiter(tmp_path: Path) -> None:
    cases = [TestCase(input="q", context=["a|b", "c"], tags=["x"])]
    path = tmp_path / "d.csv"
    Dataset.from_cases(cases).save(path, list_delimiter=";")
    assert path.read_text() == "input,context,tags\nq,a|b;c,x\n"
    assert Dataset.load(path, list_delimiter=";").cases == cases


def test_jsonl_save_omits_empty_values(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    other = TestCase(input="b", tags=["t"], tools_called=[ToolCall(name="x")])
    Dataset.from_cases([PLAIN, other]).save(path)
    assert path.read_text() == (
        '{"input": "only input"}\n{"input": "b", "tags": ["t"], "tools_called": [{"name": "x"}]}\n'
    )


def test_json_save_is_an_indented_list(tmp_path: Path) -> None:
    path = tmp_path / "d.json"
    Dataset.from_cases([PLAIN]).save(path)
    assert path.read_text() == '[\n  {\n    "input": "only input"\n  }\n]\n'


def test_csv_save_writes_only_used_columns_in_field_order(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    cases = [
        TestCase(input="a", actual_output="o", metadata={"k": 1}),
        TestCase(input="b", tags=["t", "u"]),
    ]
    Dataset.from_cases(cases).save(path)
    assert path.read_text() == 'input,tags,metadata,actual_output\na,,"{""k"": 1}",o\nb,t|u,,\n'


@pytest.mark.parametrize(
    ("case", "field", "message"),
    [
        (
            TestCase(input="a", tools_called=[ToolCall(name="t", input_parameters={"q": 1})]),
            "tools_called",
            "tool 't', which has more than a name,",
        ),
        (TestCase(input="a", context=["x|y"]), "context", "contains the list delimiter '|'"),
        (TestCase(input="a", tags=[" t"]), "tags", "the item ' t' (items are stripped on load)"),
        (TestCase(input="a", retrieval_context=[]), "retrieval_context", "an empty list"),
        (TestCase(input="a", actual_output=""), "actual_output", "an empty string"),
    ],
)
def test_csv_save_refuses_what_it_cannot_hold(
    tmp_path: Path, case: TestCase, field: str, message: str
) -> None:
    path = write(tmp_path / "d.csv", "input\nold\n")
    with pytest.raises(DatasetError) as info:
        Dataset.from_cases([PLAIN, case]).save(path)
    assert_error(info.value, path, None, field, message)
    assert info.value.detail.startswith("case 2: CSV cannot hold")
    assert info.value.detail.endswith("losslessly; save as JSONL")
    assert path.read_text() == "input\nold\n"  # the old file is untouched


def test_failed_write_keeps_the_old_file_and_leaves_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path / "d.jsonl", "old\n")

    def fail(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(DatasetError) as info:
        Dataset.from_cases([PLAIN]).save(path)
    assert_error(info.value, path, None, None, "cannot write: No space left on device")
    assert path.read_text() == "old\n"
    assert os.listdir(tmp_path) == ["d.jsonl"]


def test_save_keeps_the_mode_of_the_file_it_replaces(tmp_path: Path) -> None:
    path = write(tmp_path / "d.jsonl", "old\n")
    path.chmod(0o640)
    Dataset.from_cases([PLAIN]).save(path)
    assert path.stat().st_mode & 0o777 == 0o640
    Dataset.from_cases([PLAIN]).save(tmp_path / "new.jsonl")
    assert (tmp_path / "new.jsonl").stat().st_mode & 0o777 == 0o644


def test_save_to_unknown_extension_or_directory(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="cannot tell the format"):
        Dataset.from_cases([PLAIN]).save(tmp_path / "d.txt")
    (tmp_path / "dir.json").mkdir()
    with pytest.raises(DatasetError, match="is a directory"):
        Dataset.from_cases([PLAIN]).save(tmp_path / "dir.json")


def test_import_has_no_side_effects(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parent.parent
    code = "import sys, threading, localeval.data.dataset; print(threading.active_count())"
    env = {**os.environ, "PYTHONPATH": str(root)}
    command = [sys.executable, "-c", code]
    result = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "1\n"
    assert os.listdir(tmp_path) == []
