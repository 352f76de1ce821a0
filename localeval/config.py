"""The run configuration: a TOML file, overridden by command-line options.

Example (see ``examples/quickstart/eval.toml``)::

    [dataset]
    path = "qa.jsonl"            # relative to this file
    fields = { query = "input" } # the file's names -> localeval's

    [backend]
    model = "smollm2-135m-instruct"
    n_threads = 1

    [[metrics]]
    metric = "exact_match"
    ignore_case = true

    [[metrics]]
    metric = "geval"
    name = "correctness"
    criteria = "The answer is factually correct."

    [report]
    path = "report.json"
"""

from __future__ import annotations

import hashlib
import json
import os
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    SerializeAsAny,
    ValidationError,
    model_validator,
)

from localeval.backends.llamacpp import LlamaCppOptions
from localeval.backends.options import BackendOptions
from localeval.backends.registry import backend_options
from localeval.data.results import GateRule
from localeval.distribution import MAX_PRUNE_BELOW
from localeval.errors import ConfigError, first_problem, unknown_key, unknown_name
from localeval.metrics import build_metric
from localeval.metrics.base import Metric
from localeval.metrics.registry import metric_class
from localeval.plugins import load_plugins
from localeval.synthesizer.options import SynthesizerOptions
from localeval.targets.options import TargetOptions


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DatasetConfig(_Section):
    path: Path | None = None
    format: Literal["jsonl", "json", "csv"] | None = None
    fields: dict[str, str] = Field(default_factory=dict)
    list_delimiter: str = "|"
    unknown_fields: Literal["error", "metadata", "ignore"] = "error"


#: A judge's table, ``[backend]``: the options model of the backend kind its ``kind`` names
#: (llama.cpp when it names none), so each kind takes exactly its own keys. Built-in kinds'
#: models are beside their backends (``backends/<kind>.py``); a plugin's kind brings its own.
BackendConfig = Annotated[SerializeAsAny[BackendOptions], PlainValidator(backend_options)]


class ReportConfig(_Section):
    """Copies of the reports where you want them; the run's folder always has every format."""

    path: Path | None = Field(None, description="The JSON report.")
    html: Path | None = Field(None, description="The self-contained HTML report.")
    junit: Path | None = Field(None, description="JUnit XML, for CI systems.")
    csv: Path | None = Field(None, description="One row per case and metric, for spreadsheets.")

    def copies(self) -> dict[str, Path | None]:
        """{report format: where its copy goes} (see :mod:`localeval.reports.formats`)."""
        return {"json": self.path, "html": self.html, "junit": self.junit, "csv": self.csv}


class MetricDefaults(_Section):
    """``[metrics_defaults]``: run-wide settings of every metric, so none has to be edited one by one."""

    reasons: bool = Field(
        True, description="false: no metric asks the judge for a reason (faster; the scores are the same)."
    )
    threshold: Literal["calibrated"] | None = Field(
        None, description="'calibrated': every metric that asks a judge, and gives no threshold of its own, "
        "takes the judge's checked threshold for its family (localeval check-judge).",
    )

    verdict_reading: Literal["written", "weighted", "checked"] | None = Field(
        None, description="'weighted': every metric that counts verdicts, and sets no verdict_reading of its own, "
        "reads each verdict as the judge's probabilities (docs/metrics.md#verdicts-read-as-probabilities); "
        "'checked': each reads them the way the judge's check found better for its family.",
    )

    prune_below: float | None = Field(
        None, ge=0.0, le=MAX_PRUNE_BELOW, description="Every metric that reads a score as whole answers, and sets no "
        "prune_below of its own, leaves out reply prefixes less likely than this (faster; the score moves by "
        "less than unread_mass / covered_mass of its range).",
    )

    def applied(self, cls: type[Metric], options: dict[str, Any]) -> dict[str, Any]:
        """A metric's options with these defaults on top (reasons off) or beneath (a calibrated threshold,
        a verdict reading, a prefix threshold)."""
        fields = cls.model_fields
        if not self.reasons and "include_reason" in fields:
            options = {**options, "include_reason": False}
        if self.threshold is not None and cls.needs_judge and "threshold" not in options:
            options = {**options, "threshold": self.threshold}
        for name in ("verdict_reading", "prune_below"):
            value = getattr(self, name)
            if value is not None and name in fields and name not in options:
                options = {**options, name: value}
        return options


class CacheConfig(_Section):
    enabled: bool = True
    dir: Path | None = None


Share = Annotated[float, Field(ge=0.0, le=1.0)]


class GateConfig(_Section):
    """``[gate]``: what a run must reach to pass (exit code 0), by metric name; with any gate given, the
    exit code follows the gates instead of every case's pass or fail (docs/runs.md#gates)."""

    min_pass_rate: dict[str, Share] = Field(
        default_factory=dict, description="{metric: the least share of its scored cases that must pass}.")
    min_mean: dict[str, Share] = Field(
        default_factory=dict, description="{metric: the least mean score (0-1) of its scored cases}.")

    def rules(self) -> list[tuple[GateRule, str, float]]:
        """Every gate as (rule, metric, required), pass rates first, in the order given."""
        rates: list[tuple[GateRule, str, float]] = [("min_pass_rate", m, v) for m, v in self.min_pass_rate.items()]
        return rates + [("min_mean", m, v) for m, v in self.min_mean.items()]

    def check(self, metrics: list[Metric], where: str) -> None:
        """Refuse a gate on a metric the run does not have (what it may have meant), or a ``min_mean`` on a
        metric whose better scores are lower (its pass rate says it): a :class:`ConfigError` naming it."""
        names = {m.display_name: m for m in metrics}
        for rule, metric, _ in self.rules():
            flag = "--" + rule.replace("_", "-")
            if metric not in names:
                raise ConfigError(f"{where}: gate.{rule} ({flag}): {unknown_name('metric', metric, names)}")
            if rule == "min_mean" and names[metric].lower_is_better:
                raise ConfigError(f"{where}: gate.min_mean ({flag}): metric {metric!r} is better lower; "
                                  "gate it with min_pass_rate")


#: The settings that cannot change a score, left out of :meth:`RunConfig.scoring_sha256`: what the run
#: is called, where copies of its reports go, the cache (a hit is the same reply), what synthesize
#: does, the gates (read after the scores), and the judges' CPU threads (no cache key holds them).
_NOT_SCORING = ("name", "tags", "report", "cache", "synthesizer", "gate")


class RunConfig(_Section):
    plugins: list[str] = Field(
        default_factory=list, description="Your metric modules: .py files (relative to this file) or module names."
    )
    dataset: DatasetConfig = Field(default_factory=DatasetConfig)
    backend: BackendConfig = Field(default_factory=LlamaCppOptions)
    judges: dict[str, BackendConfig] = Field(
        default_factory=dict, description="Named judges, [judges.NAME], for metrics that say judge = 'NAME'."
    )
    metrics: list[dict[str, Any]] = Field(default_factory=list)
    metrics_defaults: MetricDefaults = Field(default_factory=MetricDefaults)
    report: ReportConfig = Field(default_factory=ReportConfig)
    cache: CacheConfig = Field(default_factory=CacheConfig)
    synthesizer: SynthesizerOptions = Field(
        default_factory=SynthesizerOptions, description="How `localeval synthesize` writes goldens."
    )
    target: TargetOptions | None = Field(
        None, description="The model that writes actual_output for goldens that lack it ([target])."
    )
    targets: list[TargetOptions] = Field(
        default_factory=list, description="Several targets side by side ([[targets]], each with a distinct name)."
    )
    name: str | None = Field(None, min_length=1, description="The run's name in `localeval runs` and its report.")
    tags: list[Annotated[str, Field(min_length=1)]] = Field(
        default_factory=list, description="Words to find the run by (`localeval runs --tag`).")
    gate: GateConfig = Field(default_factory=GateConfig, description="What the run must reach to pass.")
    source: str = Field("<command line>", exclude=True)

    @model_validator(mode="before")
    @classmethod
    def _import_plugins_first(cls, data: Any) -> Any:
        """Import the plugins before any table is validated: a plugin may register the backend kind
        (``localeval.register_backend``) that ``[backend]``, ``[judges.NAME]`` or a target names.

        A plugin that fails to import is a :class:`ConfigError` naming it (it is not a
        ``ValueError``: pydantic lets it through as it is). Each file is imported once per
        process, so validating the same config again runs nothing twice.
        """
        if isinstance(data, dict):
            plugins, source = data.get("plugins"), data.get("source", "<command line>")
            if isinstance(plugins, list) and all(isinstance(p, str) for p in plugins) and isinstance(source, str):
                load_plugins(plugins, _folder_of(source), f"{source}: plugins")
        return data

    @model_validator(mode="after")
    def _one_way_to_name_targets(self) -> RunConfig:
        if self.target is not None and self.targets:
            raise ValueError("give [target] or [[targets]], not both")
        names = [t.name for t in self.targets]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"two targets are named {twice[0]!r}; give each a distinct name")
        return self

    def all_targets(self) -> list[TargetOptions]:
        """The targets that write outputs: ``[target]``, or every ``[[targets]]``; none: the dataset has them."""
        return [self.target] if self.target is not None else list(self.targets)

    @classmethod
    def load(cls, path: Path) -> RunConfig:
        """Read a TOML config; relative paths in it are relative to the file."""
        try:
            raw = tomllib.loads(path.read_text(encoding="utf-8"))
        except OSError as err:
            raise ConfigError(f"{path}: cannot read config ({err.strerror})") from err
        except UnicodeDecodeError as err:
            raise ConfigError(f"{path}: {not_utf8(err)}") from err
        except tomllib.TOMLDecodeError as err:
            raise ConfigError(f"{path}: not valid TOML ({err})") from err
        except RecursionError as err:  # tomllib reads nested arrays and tables by recursion
            raise ConfigError(f"{path}: nested too deeply to read") from err
        try:
            config = cls.model_validate({**raw, "source": str(path)})
        except ValidationError as err:
            where, message = unknown_key(err, cls) or first_problem(err)  # a misspelt key: what it may have meant
            raise ConfigError(f"{path}: {where}: {message}" if where else f"{path}: {message}") from err
        return config.rebased(path.parent)

    def rebased(self, base: Path) -> RunConfig:
        """This config with its relative file paths made relative to ``base`` (absolute if it is)."""

        def rebase(p: Path | None) -> Path | None:
            return p if p is None or p.is_absolute() else Path(os.path.normpath(base / p))

        return self.model_copy(
            update={
                "dataset": self.dataset.model_copy(update={"path": rebase(self.dataset.path)}),
                "backend": self.backend.rebased(base),
                "judges": {name: judge.rebased(base) for name, judge in self.judges.items()},
                "report": self.report.model_copy(
                    update={name: rebase(getattr(self.report, name)) for name in ("path", "html", "junit", "csv")}
                ),
                "cache": self.cache.model_copy(update={"dir": rebase(self.cache.dir)}),
                "target": self.target.rebased(base) if self.target is not None else None,
                "targets": [target.rebased(base) for target in self.targets],
            }
        )

    def build_metrics(self) -> list[Metric]:
        """The configured metrics; errors name the file and the metric's position."""
        if not self.metrics:
            raise ConfigError(f"{self.source}: no metrics given (use --metric or [[metrics]])")
        load_plugins(self.plugins, self._base(), f"{self.source}: plugins")
        built = []
        for i, entry in enumerate(self.metrics, start=1):
            options = dict(entry)
            kind = options.pop("metric", None)
            where = f"{self.source}: metrics[{i}]"
            if not isinstance(kind, str):
                raise ConfigError(f"{where}: the 'metric' key (its type, e.g. 'geval') is missing")
            cls = metric_class(kind)
            options = self.metrics_defaults.applied(cls, options) if cls is not None else options
            try:
                metric = self._rebase_paths(build_metric(kind, options, where, folder=self._base()))
            except RecursionError as err:  # a file it reads (a schema_file) nested past Python's limit
                raise ConfigError(f"{where}: nested too deeply to read") from err
            self._check_judge(metric, where)
            built.append(metric)
        self.gate.check(built, str(self.source))
        return built

    def scoring_sha256(self) -> str:
        """The sha256 of the settings that can change a score, as canonical JSON: the same for two runs of
        the same metrics, judges and targets, whatever their names, tags, gates, report copies and cache.

        The dataset's path is left out (its content has its own sha256), and so are the judges' CPU
        threads (``n_threads``). Paths count as written: hash a config made absolute
        (``rebased``) so that two runs from different folders agree. Files the settings name (a
        prompt, a plugin) count by their path, not their content.
        """
        data = self.model_dump(mode="json", exclude=set(_NOT_SCORING))
        data["dataset"].pop("path", None)
        for table in (data["backend"], *data["judges"].values(),
                      *(t["backend"] for t in [data["target"] or {}, *data["targets"]] if "backend" in t)):
            table.pop("n_threads", None)
        text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def judge_tables(self, metrics: list[Metric]) -> dict[str | None, BackendOptions]:
        """The judges ``metrics`` ask, by name (None: ``[backend]``), and nothing more: an unused table loads nothing."""
        wanted = {m.judge_name for m in metrics if m.needs_judge}
        return {name: self.backend if name is None else self.judges[name] for name in sorted(wanted, key=str)}

    def _check_judge(self, metric: Metric, where: str) -> None:
        name = metric.judge_name
        if name is not None and name not in self.judges:
            known = ", ".join(sorted(self.judges)) or "none"
            raise ConfigError(f"{where}: judge {name!r}: there is no [judges.{name}] table (judges: {known})")

    def _base(self) -> Path:
        """The folder relative paths in this config are relative to."""
        return _folder_of(self.source)

    def _rebase_paths(self, metric: Metric) -> Metric:
        """A metric's relative path options (its prompt files, and those of the metrics and nodes
        inside it: a composite's parts, a DAG's G-Eval leaves) are relative to the config file."""
        if self.source == "<command line>":
            return metric
        rebased: Metric = rebased_paths(metric, self._base())
        return rebased


def not_utf8(error: UnicodeDecodeError) -> str:
    """What a file that is not UTF-8 text is told: "not UTF-8 text (byte 0xe9 at offset 36)"."""
    return f"not UTF-8 text (byte {error.object[error.start]:#04x} at offset {error.start})"


def _folder_of(source: str) -> Path:
    """The folder relative paths in a config from ``source`` (a file, or the command line) are relative to."""
    return Path.cwd() if source == "<command line>" else Path(source).parent


def rebased_paths(value: Any, base: Path) -> Any:
    """``value`` with every relative Path inside it (pydantic models, lists, dicts) made relative to ``base``.

    Returns the same object where nothing changed, a copy where something did.
    """
    if isinstance(value, Path):
        return value if value.is_absolute() else Path(os.path.normpath(base / value))
    if isinstance(value, BaseModel):
        update = {name: new for name, old in value if (new := rebased_paths(old, base)) is not old}
        return value.model_copy(update=update) if update else value
    if isinstance(value, list | tuple):
        items = [rebased_paths(item, base) for item in value]
        return type(value)(items) if any(a is not b for a, b in zip(items, value)) else value
    if isinstance(value, dict):
        entries = {key: rebased_paths(item, base) for key, item in value.items()}
        return entries if any(entries[k] is not value[k] for k in value) else value
    return value
