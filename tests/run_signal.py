#!/usr/bin/env python3
"""mstar-run asked to stop by SIGTERM or SIGINT mid-run: every request it
took ends exactly once (the running ones as cancelled), the stats still
print, and it exits 128 + the signal.

Usage: run_signal.py MSTAR_RUN CONFIG SIGNAL_NAME
"""
import json
import signal
import subprocess
import sys


def main():
    run, config, name = sys.argv[1:4]
    sig = getattr(signal, name)
    # Long requests, so the signal lands while they run.
    proc = subprocess.Popen([run, config, "--set", "workload.requests.max_tokens=100000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    for line in proc.stdout:  # wait for the first chunk: requests are running
        lines.append(line)
        if json.loads(line)["event"] == "chunk":
            break
    proc.send_signal(sig)
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        sys.exit("mstar-run did not stop within 60 s of the signal")
    lines += out.splitlines(keepends=True)
    events = [json.loads(l) for l in lines if l.strip()]
    seen = {e["id"] for e in events if e["event"] == "chunk"}
    ends = {}
    for e in events:
        if e["event"] in ("done", "error"):
            ends[e["id"]] = ends.get(e["id"], 0) + 1
    failures = []
    if proc.returncode != 128 + sig:
        failures.append(f"exit code {proc.returncode}, expected {128 + sig}")
    for rid in seen:
        if ends.get(rid) != 1:
            failures.append(f"request {rid} ended {ends.get(rid, 0)} times")
    if not any(e.get("reason") == "cancelled" for e in events):
        failures.append("no request ended cancelled")
    if "requests" not in err or f"stopped by {name}" not in err:
        failures.append(f"no stats or no stop message on standard error:\n{err}")
    if failures:
        sys.exit("\n".join(failures))
    print(f"{name}: {len(seen)} requests ended once each, exit {proc.returncode}")


if __name__ == "__main__":
    main()
