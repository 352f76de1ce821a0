"""Targets: the models that write the outputs a run then judges (``[target]`` in a run config)."""

from localeval.data.results import TargetRecord
from localeval.targets.generate import Generation, Outputs, generate_outputs, needing_output, planned
from localeval.targets.options import TargetOptions
from localeval.targets.template import PromptTemplate

__all__ = [
    "Generation", "Outputs", "PromptTemplate", "TargetOptions", "TargetRecord",
    "generate_outputs", "needing_output", "planned",
]
