#!/usr/bin/env python3
"""Scrapes tandemd's /metrics, parses it with the official Prometheus parser (prometheus_client), and
checks the counters against `tandem status --json` taken while nothing runs.

usage: check_metrics.py TANDEM_BINARY SOCKET
"""
import json
import subprocess
import sys
import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def fail(msg):
    print("check_metrics: FAIL: " + msg)
    sys.exit(1)


def main():
    tandem, socket = sys.argv[1], sys.argv[2]
    status = json.loads(subprocess.run([tandem, "status", "--json", "--socket", socket], check=True,
                                       capture_output=True, text=True).stdout)
    address = status["daemon"]["metrics"]
    if not address:
        fail("tandem status names no metrics endpoint")
    with urllib.request.urlopen("http://%s/metrics" % address, timeout=5) as r:
        if not r.headers["Content-Type"].startswith("text/plain; version=0.0.4"):
            fail("content type %s" % r.headers["Content-Type"])
        text = r.read().decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}  # raises on malformed text

    def value(sample_name, **labels):
        for fam in families.values():
            for s in fam.samples:
                if s.name == sample_name and all(s.labels.get(k) == v for k, v in labels.items()):
                    return s.value
        fail("no sample %s%s" % (sample_name, labels))

    # The client library of the counters names families without _total; samples keep it.
    for fam in ("tandem_jobs_completed", "tandem_dispatcher_packets", "tandem_tlb_hits", "tandem_trace_dropped"):
        if fam not in families or families[fam].type != "counter":
            fail("family %s missing or not a counter" % fam)
    if families["tandem_sessions"].type != "gauge":
        fail("tandem_sessions is not a gauge")

    checked = 0
    for f in status["functions"]:
        for metric, key in (("tandem_jobs_completed_total", "completed_jobs"),
                            ("tandem_jobs_submitted_total", "submitted_jobs"),
                            ("tandem_jobs_rejected_total", "rejected_jobs"),
                            ("tandem_demand_requests_total", "demand_requests")):
            if value(metric, function=f["function"]) != f[key]:
                fail("%s{function=%s} = %s, status says %s" % (metric, f["function"],
                                                               value(metric, function=f["function"]), f[key]))
            checked += 1
    d = status["dispatcher"]
    for metric, key in (("tandem_dispatcher_packets_total", "packets"),
                        ("tandem_dispatcher_jobs_started_total", "jobs_started"),
                        ("tandem_dispatcher_completions_total", "completions"),
                        ("tandem_dispatcher_rejected_total", "rejected"),
                        ("tandem_reconfigurations_total", "reconfigurations")):
        if value(metric) != d[key]:
            fail("%s = %s, status says %s" % (metric, value(metric), d[key]))
        checked += 1
    for metric, key in (("tandem_tlb_hits_total", "hits"), ("tandem_tlb_misses_total", "misses")):
        if value(metric) != status["tlb"][key]:
            fail("%s = %s, status says %s" % (metric, value(metric), status["tlb"][key]))
        checked += 1
    for s in status["sessions"]:
        if value("tandem_session_jobs_total", session=str(s["asid"])) != s["jobs"]:
            fail("session %s jobs differ" % s["asid"])
        if value("tandem_session_bytes_total", session=str(s["asid"]), direction="in") != s["bytes_in"]:
            fail("session %s bytes in differ" % s["asid"])
        checked += 2
    if value("tandem_sessions") != len(status["sessions"]):
        fail("tandem_sessions = %s, status lists %d" % (value("tandem_sessions"), len(status["sessions"])))
    for slot in status["slots"]:
        if value("tandem_slot_jobs_completed_total", slot=str(slot["slot"])) != slot["jobs_done"]:
            fail("slot %s jobs differ" % slot["slot"])
        if value("tandem_slot_state", slot=str(slot["slot"]), state=slot["state"]) != 1:
            fail("slot %s state differs" % slot["slot"])
        checked += 2
    for a in status["access"]:
        if value("tandem_access_jobs_total", function=a["function"], method=a["method"]) != a["jobs"]:
            fail("access jobs of %s/%s differ" % (a["function"], a["method"]))
        checked += 1
    if value("tandem_trace_enabled") != (1 if status["trace"]["enabled"] else 0):
        fail("trace enabled differs")
    if value("tandem_trace_collected_total") != status["trace"]["collected"]:
        fail("trace records collected differ")
    completed = sum(f["completed_jobs"] for f in status["functions"])
    if completed == 0:
        fail("no completed jobs: the traffic did not happen")

    # Anything but GET /metrics gets an HTTP error, and the endpoint is still there afterwards.
    for path, code in (("/other", 404),):
        try:
            urllib.request.urlopen("http://%s%s" % (address, path), timeout=5)
            fail("%s did not fail" % path)
        except urllib.error.HTTPError as e:
            if e.code != code:
                fail("%s: HTTP %d, expected %d" % (path, e.code, code))
    req = urllib.request.Request("http://%s/metrics" % address, data=b"x", method="POST")
    try:
        urllib.request.urlopen(req, timeout=5)
        fail("POST did not fail")
    except urllib.error.HTTPError as e:
        if e.code != 405:
            fail("POST: HTTP %d" % e.code)
    with urllib.request.urlopen("http://%s/metrics" % address, timeout=5) as r:
        text_string_to_metric_families(r.read().decode())
    print("check_metrics: ok: %d families, %d figures equal to tandem status (%d jobs completed)"
          % (len(families), checked, completed))


if __name__ == "__main__":
    main()
