"""The walkthrough of docs/python-api.md as a Jupyter notebook: its prose as Markdown cells, its
```python blocks as code cells, in order. The page is the one source of both; this writes the
notebook from it, and the test suite runs that notebook in a real kernel
(tests/test_python_api_docs.py).

    python examples/notebook/walkthrough.py     # writes python-api-walkthrough.ipynb here
    jupyter lab python-api-walkthrough.ipynb

nbformat, which writes it, comes with Jupyter.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
from nbformat import NotebookNode

PAGE = Path(__file__).resolve().parents[2] / "docs" / "python-api.md"
SECTION = "## A walkthrough"
#: A fenced block: its language and its text.
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n?", flags=re.DOTALL | re.MULTILINE)


def walkthrough(page: str) -> str:
    """The page's walkthrough section: from its heading to the next heading of its level."""
    start = page.index(SECTION)
    end = page.find("\n## ", start + len(SECTION))
    return page[start:] if end < 0 else page[start:end + 1]


def notebook(page: str) -> NotebookNode:
    """The walkthrough as a notebook: a code cell for each ```python block, a Markdown cell for the
    text between them (a block of another language, the shell's, stays in the Markdown)."""
    section, cells, prose = walkthrough(page), [], 0
    for block in FENCE.finditer(section):
        if block.group(1) != "python":
            continue
        cells.append(nbformat.v4.new_markdown_cell(section[prose:block.start()].strip()))
        cells.append(nbformat.v4.new_code_cell(block.group(2).rstrip("\n")))
        prose = block.end()
    if section[prose:].strip():
        cells.append(nbformat.v4.new_markdown_cell(section[prose:].strip()))
    cells[0].source = "# Python API: a walkthrough" + cells[0].source.removeprefix(SECTION)
    kernel = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    return nbformat.v4.new_notebook(cells=[cell for cell in cells if cell.source], metadata=kernel)


def main(out: str = "python-api-walkthrough.ipynb") -> None:
    nbformat.write(notebook(PAGE.read_text(encoding="utf-8")), out)
    print(f"wrote {out}")


if __name__ == "__main__":
    main(*sys.argv[1:2])
