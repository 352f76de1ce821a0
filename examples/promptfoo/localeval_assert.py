# promptfoo's `file://localeval_assert.py` assertions: localeval's metrics, judged on a local model.
# Not named localeval.py: promptfoo puts this folder first on sys.path, where that name would hide the package.
from localeval.integrations.promptfoo import get_assert  # noqa: F401
