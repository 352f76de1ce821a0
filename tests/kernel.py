"""A notebook run in a real Jupyter kernel (ipykernel, driven by nbclient), as Jupyter runs it, with
every message each cell sent to the front end kept: a display that is updated in place leaves one
output in the notebook, but its updates are messages of their own."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
from nbformat import NotebookNode
from traitlets import default

#: The messages a cell's output is made of (the others say the kernel is busy, echo the code, ...).
OUTPUTS = {"stream", "display_data", "update_display_data", "execute_result", "error", "clear_output"}


class ThisInterpreter(AsyncKernelManager):
    """The kernel ``python3`` as ipykernel itself specifies it, run by this interpreter (the venv's):
    no kernel registered on the machine (the user's, the venv's, the system's) is looked up."""

    @default("kernel_spec_manager")
    def _no_registered_kernels(self) -> KernelSpecManager:
        return KernelSpecManager(kernel_dirs=[])


@dataclass(frozen=True)
class Message:
    """One output message a cell sent: its type and content (display_data's ``transient`` included)."""

    type: str
    content: dict[str, Any]

    @property
    def display_id(self) -> str | None:
        return self.content.get("transient", {}).get("display_id")

    @property
    def text(self) -> str:
        """What a plain-text front end shows: a stream's text, a display's text/plain, an error's name and value."""
        if self.type == "stream":
            return str(self.content["text"])
        if self.type == "error":
            return f"{self.content['ename']}: {self.content['evalue']}"
        return str(self.content.get("data", {}).get("text/plain", ""))


class Recording(NotebookClient):
    """nbclient's client, keeping each cell's output messages as they came (``sent``, by cell)."""

    def __init__(self, nb: NotebookNode, **kwargs: Any) -> None:
        super().__init__(nb, **kwargs)
        self.sent: dict[int, list[Message]] = {}

    def process_message(self, msg: dict[str, Any], cell: NotebookNode, cell_index: int) -> NotebookNode | None:
        if msg["msg_type"] in OUTPUTS:
            self.sent.setdefault(cell_index, []).append(Message(msg["msg_type"], msg["content"]))
        return super().process_message(msg, cell, cell_index)


def run_notebook(nb: NotebookNode, folder: Path, timeout: int = 300) -> list[list[Message]]:
    """Execute ``nb`` in a new kernel started in ``folder`` (its environment: this process's), in
    place; each cell's output messages, in order. A cell that raises stops it
    (:class:`nbclient.exceptions.CellExecutionError`)."""
    client = Recording(nb, kernel_name="python3", kernel_manager_class=ThisInterpreter, timeout=timeout,
                       resources={"metadata": {"path": str(folder)}})
    client.execute()
    return [client.sent.get(index, []) for index in range(len(nb.cells))]
