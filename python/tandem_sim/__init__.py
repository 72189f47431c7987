"""tandem_sim: tandem's discrete-event simulator from Python.

The simulator stays C++: every run goes through `tandem sim exec` (a subprocess), so a result is the
same bytes whether it was computed by `tandem sim sweep` on this machine or by a Ray worker.

    from tandem_sim import run_spec, find_tandem
    result_json_line = run_spec(spec_text, find_tandem())

`python -m tandem_sim ray ...` is what `tandem sim sweep --ray` starts (see ray_sweep.py).
"""
from .runner import find_tandem, run_spec

__all__ = ["find_tandem", "run_spec"]
