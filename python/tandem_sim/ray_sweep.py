"""A sweep's missing runs as Ray tasks.

`tandem sim sweep --ray ADDRESS|local` writes the runs it lacks as JSON lines ({"id", "spec"}) and
starts `python -m tandem_sim ray`; each run becomes a Ray task that calls `tandem sim exec` on a
worker. The driver writes every result to OUT/<id>.json as it arrives (renamed into place, so an
interrupted sweep keeps what finished), which is exactly what a local sweep writes.
"""
import json
import os
import sys
import time

from .runner import run_spec


def _run(tandem, spec):
    start = time.perf_counter()
    text = run_spec(spec, tandem)
    return text, time.perf_counter() - start


def _store(out_dir, run_id, text):
    path = os.path.join(out_dir, run_id + ".json")
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    os.replace(tmp, path)


def ray_sweep(address, tandem, jobs, out_dir, workers=None, timing_path=None, log=print):
    """Runs `jobs` ([{"id", "spec"}]) on Ray; `address` is a cluster address or "local" (a new
    instance on this machine with `workers` CPUs, default every core)."""
    import ray  # imported here: the package's runner works without Ray

    os.makedirs(out_dir, exist_ok=True)
    t0 = time.perf_counter()
    if address == "local":
        ray.init(num_cpus=workers or os.cpu_count(), include_dashboard=False, logging_level="ERROR")
    else:
        ray.init(address=address, logging_level="ERROR")
    started = time.perf_counter()
    try:
        task = ray.remote(num_cpus=1)(_run)
        pending = {task.remote(tandem, job["spec"]): job["id"] for job in jobs}
        done, last, task_seconds = 0, 0.0, 0.0
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=min(len(pending), 16), timeout=2.0)
            for ref in ready:
                run_id = pending.pop(ref)
                text, seconds = ray.get(ref)
                _store(out_dir, run_id, text)
                task_seconds += seconds
                done += 1
            now = time.perf_counter()
            if now - last >= 2.0 or not pending:
                last = now
                log(f"ray: {done}/{len(jobs)} runs, {now - t0:.1f} s elapsed", file=sys.stderr, flush=True)
        finished = time.perf_counter()
    finally:
        ray.shutdown()
    if timing_path:
        with open(timing_path, "w", encoding="utf-8") as f:
            json.dump({"runs": len(jobs), "ray_start_seconds": started - t0, "tasks_wall_seconds": finished - started,
                       "task_seconds": task_seconds, "workers": workers or 0, "address": address}, f, indent=2)
            f.write("\n")
