"""python -m tandem_sim ray --address ADDRESS|local --tandem BIN --jobs FILE --out DIR [--workers N]"""
import argparse
import json
import sys

from .ray_sweep import ray_sweep


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m tandem_sim")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("ray", help="run a sweep's missing runs as Ray tasks (started by tandem sim sweep --ray)")
    r.add_argument("--address", required=True, help="Ray cluster address, or 'local' to start an instance here")
    r.add_argument("--tandem", required=True, help="the tandem binary (the same path on every worker)")
    r.add_argument("--jobs", required=True, help="JSON lines: {\"id\": ..., \"spec\": ...}")
    r.add_argument("--out", required=True, help="folder of the run results (DIR/runs)")
    r.add_argument("--workers", type=int, default=0, help="with --address local: CPUs of the instance")
    r.add_argument("--timing", help="write Ray's start-up and task times here (JSON)")
    args = p.parse_args(argv)
    try:
        import ray  # noqa: F401
    except ImportError:
        sys.exit("tandem_sim: Ray is not installed (make setup installs it, or pip install ray)")
    with open(args.jobs, encoding="utf-8") as f:
        jobs = [json.loads(line) for line in f if line.strip()]
    ray_sweep(args.address, args.tandem, jobs, args.out, args.workers or None, args.timing)


if __name__ == "__main__":
    main()
