# The compiled module (python/src/lib.rs): the simulator's commands behind one function.
# hopper_sim/__init__.py is its typed front end.
from typing import Tuple

def call(command: str, request: str, /) -> Tuple[bool, str]:
    """Runs `command` (init, run, sweep, tune, analyze, presets) on the JSON object `request`
    with the GIL released: (True, the command's JSON output) or (False, the error message)."""
    ...
