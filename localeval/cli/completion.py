"""Shell completion for the shell a user names: ``localeval --show-completion bash``, ``--install-completion zsh``.

typer's own two options take no value: they print or install the script of the shell they find among
the process's parents and ignore a name after them, so ``--show-completion bash`` typed in zsh printed
zsh's script, and under ``sh`` (a Dockerfile's ``RUN``, a Makefile) it failed. :func:`answer` takes
both forms before typer reads the command line: the shell named, else the one typer finds, else one
line asking for a name. The scripts and their installation are typer's, through its module
``typer._completion_shared`` (not public: ``tests/test_cli_conventions.py`` runs every form).
"""

from __future__ import annotations

from localeval.errors import ConfigError

OPTIONS = ("--show-completion", "--install-completion")
#: The shells typer writes completion scripts for.
SHELLS = ("bash", "zsh", "fish", "powershell", "pwsh")
PROGRAM = "localeval"
COMPLETE_VAR = "_LOCALEVAL_COMPLETE"


def answer(args: list[str]) -> bool:
    """Print or install the completion script when ``args`` are one of :data:`OPTIONS`, with or without a
    shell's name; False (nothing done) for any other command line."""
    if not args or args[0] not in OPTIONS or len(args) > 2:
        return False
    option = args[0]
    shell = args[1] if len(args) == 2 else _current_shell(option)
    if shell not in SHELLS:
        raise ConfigError(f"{option} {shell}: no completion for that shell; name one of {', '.join(SHELLS)}")
    from typer._completion_shared import get_completion_script, install

    if option == "--show-completion":
        print(get_completion_script(prog_name=PROGRAM, complete_var=COMPLETE_VAR, shell=shell))
    else:
        name, path = install(shell=shell, prog_name=PROGRAM, complete_var=COMPLETE_VAR)
        print(f"{name} completion installed in {path}; it takes effect in a new {name}")
    return True


def _current_shell(option: str) -> str:
    from typer._completion_shared import _get_shell_name

    name = _get_shell_name()
    if name not in SHELLS:
        found = f"this process runs under {name}, which has none" if name else "no shell was found among its parents"
        raise ConfigError(f"{option}: {found}; name the shell: localeval {option} bash (or {', '.join(SHELLS[1:])})")
    return str(name)
