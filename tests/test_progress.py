"""Progress where no bar can be drawn: a CI log (output piped) gets a line of progress at a steady pace."""

from __future__ import annotations

import io

from rich.console import Console

from localeval.cli.console import PROGRESS_PERIOD_S, progress_bar
from localeval.data.results import MetricResult
from localeval.run.events import MetricFinished, RunStarted


class Clock:
    """Seconds that pass only when told to."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def finished(case: int, passed: bool | None) -> MetricFinished:
    result = MetricResult(metric="m", kind="probe", threshold=0.5, score=None if passed is None else float(passed),
                          passed=passed, error="down" if passed is None else None)
    return MetricFinished(case, result, 0.1, 1, 0)


def test_piped_a_line_of_progress_comes_every_period_as_results_finish() -> None:
    out, clock = io.StringIO(), Clock()
    with progress_bar(Console(file=out, width=40), clock=clock) as listen:
        listen(RunStarted("r", 100, ("m",), 200, 40))  # 40 resumed from the journal
        for case in range(160):
            clock.now += 0.5  # a result every half second: a line every 20 results
            listen(finished(case, None if case == 3 else case % 4 != 0))
    lines = out.getvalue().splitlines()
    assert len(lines) == 160 * 0.5 / PROGRESS_PERIOD_S == 8
    assert lines[0] == "judging: 60/200 (30%), 2.00/s, 5 failed, 1 errored, about 1 min 10 s left"
    assert lines[-1] == "judging: 200/200 (100%), 2.00/s, 40 failed, 1 errored"


def test_on_a_terminal_no_line_is_printed() -> None:
    out, clock = io.StringIO(), Clock()
    with progress_bar(Console(file=out, force_terminal=True, width=100), clock=clock) as listen:
        listen(RunStarted("r", 2, ("m",), 2, 0))
        clock.now += 3 * PROGRESS_PERIOD_S
        listen(finished(0, True))
    assert "judging:" not in out.getvalue()


def test_piped_a_target_writing_outputs_prints_its_progress_too() -> None:
    from localeval.cli.generate import generation_progress

    out, clock = io.StringIO(), Clock()
    with generation_progress(Console(file=out, width=40), "qwen", clock=clock) as listen:
        for done in range(1, 61):
            clock.now += 1.0  # an output a second: a line every ten
            listen(done, 60)
    lines = out.getvalue().splitlines()
    assert len(lines) == 6 and lines[0] == "qwen writing: 10/60, 1.00/s"
