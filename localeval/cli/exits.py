"""The exit codes of every command, in one place: scripts and CI read them.

0 done (every metric passed); 1 some metric failed, or a comparison found a
regression; 2 bad usage or input, before any judge call; 3 some result could not
be computed (listed); 130 interrupted, what was computed is saved.
"""

EXIT_OK, EXIT_FAILED, EXIT_INPUT, EXIT_ERRORED, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
