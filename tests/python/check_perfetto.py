#!/usr/bin/env python3
"""Checks a `tandem trace export --format perfetto` file without Perfetto's trace processor (it fetches
a binary on first use): it loads as Chrome trace JSON, holds exactly the expected jobs, each job's
phases are ordered and inside its slice, slots and sessions have tracks, and flows link the client's
publish to the slot and back to the client's observation.

usage: check_perfetto.py TRACE.json --function NAME --tags FIRST:COUNT [--client-flows N] [--refused N]
"""
import argparse
import collections
import json
import sys


def fail(msg):
    print("check_perfetto: FAIL: " + msg)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--function", required=True)
    ap.add_argument("--tags", required=True, help="FIRST:COUNT of the no-op jobs' tags")
    ap.add_argument("--client-flows", type=int, default=0, help="at least this many client->slot->client flows")
    ap.add_argument("--refused", type=int, default=0)
    a = ap.parse_args()
    first, count = (int(x) for x in a.tags.split(":"))

    with open(a.trace) as f:
        doc = json.load(f)
    events = doc["traceEvents"]
    slices = [e for e in events if e["ph"] == "X"]
    meta = [e for e in events if e["ph"] == "M"]
    for e in slices:
        if e["dur"] < 0 or e["ts"] <= 0:
            fail("a slice with a negative duration or no timestamp: %r" % e)

    # Exactly the known jobs, once each.
    jobs = [e for e in slices if e["cat"] == "job" and e["name"] == a.function
            and first <= e["args"]["tag"] < first + count]
    tags = collections.Counter(e["args"]["tag"] for e in jobs)
    if len(tags) != count or any(n != 1 for n in tags.values()):
        fail("expected %d jobs with tags %d.., found %d slices over %d tags" % (count, first, len(jobs), len(tags)))

    # Each job's phases: on its track, inside the job's slice, one after the other.
    by_track = collections.defaultdict(list)
    for e in slices:
        by_track[(e["pid"], e["tid"])].append(e)
    for job in jobs:
        begin, end = job["ts"], job["ts"] + job["dur"]
        phases = sorted((e for e in by_track[(job["pid"], job["tid"])]
                         if e["cat"] == "phase" and begin - 1e-3 <= e["ts"] and e["ts"] + e["dur"] <= end + 1e-3),
                        key=lambda e: e["ts"])
        names = [p["name"] for p in phases]
        for needed in ("decode", "queue", "device", "complete"):
            if needed not in names:
                fail("job %d lacks its %s phase (has %s)" % (job["args"]["tag"], needed, names))
        for p, q in zip(phases, phases[1:]):
            if q["ts"] < p["ts"] + p["dur"] - 1e-3:
                fail("job %d: phase %s overlaps %s" % (job["args"]["tag"], q["name"], p["name"]))

    # Tracks: named slots in the daemon's process, sessions as processes of their own.
    names = {(m["pid"], m["tid"]): m["args"]["name"] for m in meta if m["name"] == "thread_name"}
    slot_tracks = {k for k, v in names.items() if v.startswith("slot ")}
    if not slot_tracks:
        fail("no slot tracks")
    ran_on_slots = [e for e in slices if e["cat"] == "slot" and e["name"] == a.function
                    and first <= e["args"]["tag"] < first + count]
    if len(ran_on_slots) != count:
        fail("expected %d slot slices, found %d" % (count, len(ran_on_slots)))
    if any((e["pid"], e["tid"]) not in slot_tracks for e in ran_on_slots):
        fail("a job ran on a track that is not a named slot")
    processes = [m["args"]["name"] for m in meta if m["name"] == "process_name"]
    if not any(p.startswith("tandemd") for p in processes) or not any(p.startswith("session") for p in processes):
        fail("missing process names: %s" % processes)

    refused = [e for e in slices if e["cat"] == "refused"]
    if len(refused) != a.refused:
        fail("expected %d refused packets, found %d" % (a.refused, len(refused)))

    # Flows (bind_id): start on a client thread, step through the session and the slot, end on the
    # client again, ordered in time.
    flows = collections.defaultdict(list)
    for e in slices:
        if "bind_id" in e:
            flows[e["bind_id"]].append(e)
    complete = 0
    for fid, steps in flows.items():
        outs = [e for e in steps if e.get("flow_out") and not e.get("flow_in")]
        ins = [e for e in steps if e.get("flow_in") and not e.get("flow_out")]
        if not outs or not ins:
            continue
        # At equal times the flow's source comes first and its end last (a step is both).
        steps.sort(key=lambda e: (e["ts"], 0 if not e.get("flow_in") else 2 if not e.get("flow_out") else 1))
        if steps[0] is not outs[0] or steps[-1] is not ins[-1]:
            fail("flow %d is not ordered: begins with %s, ends with %s" % (fid, steps[0]["name"], steps[-1]["name"]))
        # Client publish -> the job in its session -> its slot -> client observation.
        cats = [e["cat"] for e in steps]
        if (cats[0] == "client_job" and cats[-1] == "client_job" and "job" in cats and "slot" in cats
                and steps[0]["pid"] == steps[-1]["pid"] and len({e["pid"] for e in steps}) >= 3):
            complete += 1
    if complete < a.client_flows:
        fail("expected at least %d client->slot->client flows, found %d" % (a.client_flows, complete))
    print("check_perfetto: ok: %d jobs, %d slot tracks, %d flows across processes, %d refused"
          % (len(jobs), len(slot_tracks), complete, len(refused)))


if __name__ == "__main__":
    main()
