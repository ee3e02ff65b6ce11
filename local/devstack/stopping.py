"""How the stack's own processes end once stopped: at once."""

from __future__ import annotations

import logging
import os
import sys


def exit_now(code: int) -> None:
    """Exit with ``code`` once the logs are flushed, without tearing the interpreter down.
    A process of the stack holds nothing that must outlive it (the emulator's data is in
    memory and dies with it), and the teardown, which frees every module and object one by
    one while the loops' daemon threads are still in their calls, took 1-2.5 s after the
    process was done (the emulator on an idle machine, the pump on a busy one), which
    ``make run``'s Ctrl-C waited for."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
