"""Square brackets in help texts reach the screen (issue 25, item 7c).

typer renders help as rich markup, where ``[ray]`` or ``[target]`` is a style tag and vanishes:
``pip install 'localeval[ray]'`` printed as ``pip install 'localeval'``. Help texts write
``\\[ray]``. This walks every command and group of the app, renders its ``--help`` as the user
sees it, and checks that every ``[...]`` its help texts (the command's own, each option's and
argument's) mean to show is there.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import typer
from typer.testing import CliRunner

from localeval.cli.app import app

#: Wide enough that no help line wraps: a bracketed phrase is then found whole.
WIDTH = 2000


def commands(root: typer.Typer) -> Iterator[tuple[list[str], Any]]:
    """Every command of ``root``, groups and the app itself included, with the words that name it."""

    def walk(command: Any, path: list[str]) -> Iterator[tuple[list[str], Any]]:
        yield path, command
        for name, sub in getattr(command, "commands", {}).items():
            yield from walk(sub, [*path, name])

    yield from walk(typer.main.get_command(root), [])


def bracketed(text: str) -> list[str]:
    """The ``[...]`` phrases ``text`` shows, outermost first, nested ones (``[[targets]]``) whole;
    ``\\[`` (markup's escape) is the bracket it stands for."""
    shown = text.replace("\\[", "[")
    found, depth, start = [], 0, 0
    for at, char in enumerate(shown):
        if char == "[":
            start, depth = (at if depth == 0 else start), depth + 1
        elif char == "]" and depth:
            depth -= 1
            if depth == 0:
                found.append(shown[start:at + 1])
    return found


def lost_brackets(root: typer.Typer) -> list[str]:
    """``command: [phrase]`` for each bracketed phrase of a help text that its rendered ``--help`` lacks."""
    runner = CliRunner()
    lost = []
    for path, command in commands(root):
        texts = [command.help or "", *(getattr(param, "help", None) or "" for param in command.params)]
        done = runner.invoke(root, [*path, "--help"], env={"COLUMNS": str(WIDTH)}, terminal_width=WIDTH)
        assert done.exit_code == 0, (path, done.output)
        screen = " ".join(done.output.replace("│", " ").split())
        lost += [f"{' '.join(path) or 'localeval'}: {phrase}" for text in texts for phrase in bracketed(text)
                 if " ".join(phrase.split()) not in screen]
    return lost


def test_every_bracketed_phrase_of_every_help_text_is_shown() -> None:
    assert lost_brackets(app) == []
    assert sum(len(bracketed(command.help or "")) for _, command in commands(app)) > 10  # the walk saw them


def test_an_unescaped_bracket_is_caught() -> None:
    """What the check above guards against: markup eating a bracketed word."""
    sample = typer.Typer(rich_markup_mode="rich")
    extra = typer.Typer(help="Extras: pip install 'localeval[ray]'.")
    sample.add_typer(extra, name="extra")

    @extra.command()
    def go(config: str = typer.Option("", help="A TOML config with a [target] table, or \\[backend].")) -> None:
        """Go with the \\[\\[targets]] of a config."""

    assert lost_brackets(sample) == ["extra: [ray]", "extra go: [target]"]
