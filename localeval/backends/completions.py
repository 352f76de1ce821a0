"""The ``completion`` prefill: the client renders the chat and posts it to ``{base}/completions``.

llama-cpp-python's server does not continue a final assistant message, and a
grammar that forces the prefill changes how it is split into tokens (the
score then moves by ~0.18 on the test case). The legacy completions endpoint,
which both llama.cpp servers serve, takes a raw prompt instead: rendered here
with the model's chat template and ending with the prefill, it is the same
text the in-process backend reads, tokenized the same way (both servers parse
special-token text such as ``<|im_start|>`` into the special token, and add the
BOS token only when the model's vocabulary asks for it). One token is
generated; the distribution is read from the alternatives at that position.

Not the same tokens when a message's content spells a special token: the servers
parse it there too, where the in-process backend reads it as text
(:func:`localeval.backends.chat.token_pieces`). A string prompt cannot say which
text is a message's; docs/http-backends.md ("Message text over HTTP") says what a
server would need.

Templates are rendered with an empty ``bos_token``: the server adds the BOS
token itself, and a template that also wrote it would give two.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2

from localeval.backends.base import Message
from localeval.backends.chat import CHATML, JinjaChatFormat
from localeval.errors import BackendError, ConfigError


def completion_chat_format(option: str | None, props: Any, backend: str) -> JinjaChatFormat:
    """The chat template for the ``completion`` prefill.

    ``option`` is ``"chatml"``, the path of a Jinja template file, or the path of the
    served model's GGUF file (its embedded template); None takes the template the server
    reports in ``GET /props`` (llama.cpp's llama-server).
    """
    if option == "chatml":
        return JinjaChatFormat(CHATML)
    if option is not None:
        return _template_file(Path(option), backend)
    served = props.get("chat_template") if isinstance(props, dict) else None
    if not isinstance(served, str) or not served:
        raise ConfigError(
            f"{backend} backend option chat_template: the 'completion' prefill renders the chat "
            "itself and the server does not report its template; set chat_template to 'chatml' "
            "or to a Jinja template file (the model's tokenizer_config.json 'chat_template')"
        )
    return _compiled(served, str(props.get("eos_token") or ""), backend, "the server's template")


def _template_file(path: Path, backend: str) -> JinjaChatFormat:
    if path.suffix == ".gguf":
        return _gguf_template(path, backend)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise ConfigError(f"{backend} backend option chat_template: cannot read {path}: {err.strerror}") from err
    return _compiled(text, "", backend, str(path))


def _gguf_template(path: Path, backend: str) -> JinjaChatFormat:
    """The template a GGUF model file carries, as a server running that file renders it (default lines
    included, such as the system line Qwen's and SmolLM2's add to a chat that has none)."""
    where = f"{backend} backend option chat_template"
    if not path.is_file():
        raise ConfigError(f"{where}: no such model file: {path}")
    with path.open("rb") as file:
        if file.read(4) != b"GGUF":
            raise ConfigError(f"{where}: {path} is not a GGUF model file")
    from llama_cpp import Llama

    try:
        model = Llama(str(path), vocab_only=True, verbose=False)
    except ValueError as err:
        raise ConfigError(f"{where}: llama.cpp cannot read {path}: {err}") from err
    template = model.metadata.get("tokenizer.chat_template")
    if not template:
        raise ConfigError(f"{where}: {path} carries no chat template; give a Jinja template file or 'chatml'")
    eos = model.detokenize([model.token_eos()], special=True).decode("utf-8", errors="replace")
    return _compiled(template, eos, backend, str(path))


def _compiled(template: str, eos_token: str, backend: str, where: str) -> JinjaChatFormat:
    try:
        return JinjaChatFormat(template, bos_token="", eos_token=eos_token)
    except jinja2.TemplateError as err:
        problem = f"{where} is not a valid template: {err}"
        raise ConfigError(f"{backend} backend option chat_template: {problem}") from err


def render_prompt(chat_format: JinjaChatFormat, messages: tuple[Message, ...], prefill: str) -> str:
    """The raw prompt: the chat, the assistant's turn opened, then the prefill, as one string.

    The server parses special-token strings anywhere in it, a message's content included
    (see the module's docstring): unlike the in-process backend, which reads contents as text.
    """
    try:
        return chat_format.render_text(messages, prefill)
    except jinja2.TemplateError as err:
        where = f"the chat template ({chat_format.identity})"
        raise BackendError(f"{where} cannot render these messages: {err}") from err


def completion_body(model: str, prompt: str | list[str], top_logprobs: int) -> dict[str, Any]:
    """One greedy token after ``prompt``, with the top alternatives at its position; after each
    of several prompts, one choice each, where the server takes a list (llama-server)."""
    return {"model": model, "prompt": prompt, "max_tokens": 1, "temperature": 0.0, "seed": 0,
            "logprobs": top_logprobs}
