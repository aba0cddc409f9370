"""A user's own tool module, written into a test's folder: importable only by processes whose
PYTHONPATH has that folder (a worker without it cannot load the plans made with it)."""

from __future__ import annotations

__all__ = ["ECHO", "USER_TOOLS"]

ECHO = {"steps": [{"id": "said", "tool": "shout", "parameters": {"text": "hi"}}]}

USER_TOOLS = '''
"""A user's own tool module, importable only where its folder is on PYTHONPATH."""
import json, os


def shout(text: str) -> str:
    """Say it louder."""
    log = os.environ.get("TOOLPLAN_TEST_LOG")
    if log:
        with open(log, "a") as handle:
            handle.write(json.dumps({"step": "shout", "event": "call", "pid": os.getpid()}) + "\\n")
    return text.upper()


TOOLS = [shout]
'''
