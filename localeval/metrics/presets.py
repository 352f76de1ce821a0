"""G-Eval dimension presets, usable by name: ``geval:coherence`` on the command line or in a config.

Summary dimensions (coherence, consistency, fluency, relevance) judge an
``actual_output`` summary of the ``input`` source document, as in SummEval.
Dialogue dimensions (engagingness, naturalness, groundedness) judge an
``actual_output`` response to the ``input`` conversation, as in Topical-Chat;
groundedness also reads the ``context`` fact the response should use. Ranges
follow the human annotations of those datasets, so a preset's scores have the
levels of the humans': groundedness is 0-3 because Topical-Chat's labels are 0,
1/3, 2/3 and 1 (three annotators' yes/no on "uses the fact", averaged), and a
judge's s of 0-3 scores s/3, one of those four. Any option can be overridden.
"""

from __future__ import annotations

from typing import Any

_SUMMARY = {"input": "Source Document", "actual_output": "Summary"}
_DIALOGUE = {"input": "Conversation History", "actual_output": "Response", "context": "Fact"}

PRESETS: dict[str, dict[str, Any]] = {
    "coherence": {
        "criteria": "Coherence: the summary is well-structured and well-organized; it builds "
        "from sentence to sentence into a coherent body of information about the topic, "
        "not a heap of related facts.",
        "evaluation_steps": [
            "Read the source document and identify its main topic and key points.",
            "Read the summary and check that it presents those points in a clear, logical order.",
            "Check that each sentence follows from the previous one without abrupt jumps or contradictions.",
            "Assign a score for coherence.",
        ],
        "score_range": (1, 5),
        "evaluation_params": ("input", "actual_output"),
        "field_labels": _SUMMARY,
    },
    "consistency": {
        "criteria": "Consistency: every fact in the summary is supported by the source document; "
        "a summary that states anything the document does not say, or contradicts it, is inconsistent.",
        "evaluation_steps": [
            "Read the source document carefully and note its facts.",
            "Read the summary and list the facts it states.",
            "Check each fact of the summary against the source document; look for contradictions "
            "and for details the document does not contain.",
            "Assign a score for consistency: lower for each unsupported or contradicted fact.",
        ],
        "score_range": (1, 5),
        "evaluation_params": ("input", "actual_output"),
        "field_labels": _SUMMARY,
    },
    "fluency": {
        "criteria": "Fluency: the summary is well-written: grammatical, correctly spelled and "
        "punctuated, with natural word choice, so it is easy to read.",
        "evaluation_steps": [
            "Read the summary.",
            "Look for grammatical errors, misspellings, broken sentences and awkward phrasing.",
            "Assign a score for fluency: 1 when errors make it hard to read, 2 when some errors "
            "distract, 3 when it reads smoothly.",
        ],
        "score_range": (1, 3),
        "evaluation_params": ("actual_output",),
        "field_labels": _SUMMARY,
    },
    "relevance": {
        "criteria": "Relevance: the summary selects the most important content of the source "
        "document and leaves out redundant or unimportant detail.",
        "evaluation_steps": [
            "Read the source document and identify its most important points.",
            "Read the summary and check which of those points it covers.",
            "Check whether it spends words on minor details or repeats itself.",
            "Assign a score for relevance.",
        ],
        "score_range": (1, 5),
        "evaluation_params": ("input", "actual_output"),
        "field_labels": _SUMMARY,
    },
    "engagingness": {
        "criteria": "Engagingness: the response is interesting and makes the other person want "
        "to continue the conversation, rather than being dull or generic.",
        "evaluation_steps": [
            "Read the conversation history.",
            "Read the response and judge whether it adds something interesting: a fact, an opinion or a question.",
            "Assign a score for engagingness: 1 dull, 2 somewhat interesting, 3 engaging.",
        ],
        "score_range": (1, 3),
        "evaluation_params": ("input", "actual_output"),
        "field_labels": _DIALOGUE,
    },
    "naturalness": {
        "criteria": "Naturalness: the response is something a person would naturally say next "
        "in this conversation.",
        "evaluation_steps": [
            "Read the conversation history.",
            "Read the response and judge whether it fits the conversation in tone and content, "
            "as a person would reply.",
            "Assign a score for naturalness: 1 unnatural, 2 somewhat natural, 3 natural.",
        ],
        "score_range": (1, 3),
        "evaluation_params": ("input", "actual_output"),
        "field_labels": _DIALOGUE,
    },
    "groundedness": {
        "criteria": "Groundedness: the response uses the given fact correctly, and what it "
        "states is supported by that fact.",
        "evaluation_steps": [
            "Read the conversation history and the fact.",
            "Read the response and find what in it comes from the fact.",
            "Check that the response states the fact correctly and adds no unsupported claims.",
            "Assign a score for groundedness: 0 when the response ignores or contradicts the fact, "
            "1 when it barely uses it, 2 when it uses part of it, 3 when it uses it fully and correctly.",
        ],
        "score_range": (0, 3),
        "evaluation_params": ("input", "actual_output", "context"),
        "field_labels": _DIALOGUE,
    },
}


def preset_options(name: str) -> dict[str, Any] | None:
    """The options of preset ``name``, with the preset's name as the metric's name; None if unknown.

    Presets put the case first: a dataset is usually judged on several of them at
    once (SummEval's four dimensions), and then every dimension's prompt shares
    the case, read once. Their human-alignment figures were measured so.
    """
    preset = PRESETS.get(name)
    return None if preset is None else {"name": name, "layout": "case_first", **preset}
