#!/usr/bin/env python3
"""mstar-serve end to end, as a user runs it: the program on a free port,
docs/examples/serve_client.py (the documented client) streaming and
cancelling, and SIGTERM ending a running stream with "cancelled" and exit 0.

    serve_cli.py MSTAR_SERVE SOURCE_DIR
"""
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

serve, source = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(source, "docs", "examples"))
from serve_client import generate  # noqa: E402


def fail(message):
    sys.exit(f"serve_cli: {message}")


proc = subprocess.Popen([serve, "configs/tts-demo.yaml", "--port", "0", "--set", "resources.voice_kv.max_slots=2"],
                        cwd=source, stderr=subprocess.PIPE, text=True)
try:
    line = proc.stderr.readline()
    m = re.fullmatch(r"mstar-serve: listening on http://127\.0\.0\.1:(\d+)\n", line)
    if not m:
        fail(f"unexpected first line on stderr: {line!r}")
    port = int(m.group(1))

    def models():
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=10) as r:
            return json.load(r)["models"][0]

    events = list(generate(port, {"id": "a", "voice": "alice", "prompt": [5, 9, 2], "max_tokens": 20}))
    if [e["event"] for e in events] != ["chunk", "chunk", "done"] or events[-1]["reason"] != "max_tokens":
        fail(f"stream: {events}")

    # Leaving the loop closes the connection: the request is cancelled and its slot freed.
    # (alice and bob with prompt [3] decode past 4,000 tokens without the end token.)
    for e in generate(port, {"id": "b", "voice": "bob", "prompt": [3], "max_tokens": 1 << 20}):
        break
    deadline = time.time() + 10
    while models()["resources"][0]["in_use"] != 0:
        if time.time() > deadline:
            fail("the slot of a cancelled request was not freed")
        time.sleep(0.02)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        metrics = r.read().decode()
    if 'mstar_requests_total{outcome="cancelled",cause="disconnect"} 1\n' not in metrics:
        fail("the hung-up request was not counted as cancelled")

    try:
        list(generate(port, {"id": "c", "voice": "carol", "prompt": [1], "max_tokens": 2}))
        fail("an unknown voice was accepted")
    except RuntimeError as e:
        if str(e) != "HTTP 400: request 'c': unknown voice 'carol' (voices: alice, bob)":
            fail(f"refusal: {e}")

    # SIGTERM with a stream running: it ends with "cancelled", the server exits 0.
    stream = generate(port, {"id": "d", "voice": "alice", "prompt": [3], "max_tokens": 1 << 20})
    next(stream)
    proc.send_signal(signal.SIGTERM)
    last = list(stream)[-1]
    if last["event"] != "done" or last["reason"] != "cancelled":
        fail(f"after SIGTERM the stream ended with {last}")
    rc = proc.wait(timeout=20)
    rest = proc.stderr.read()
    if rc != 0:
        fail(f"exit code {rc} after SIGTERM; stderr: {rest}")
    if "1 streams open at shutdown: 0 ended while draining, 1 cancelled" not in rest:
        fail(f"no shutdown report on stderr: {rest!r}")
    print("serve_cli: ok")
finally:
    if proc.poll() is None:
        proc.kill()
