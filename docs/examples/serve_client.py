#!/usr/bin/env python3
"""A client of mstar-serve in the standard library alone (docs/serving.md).

    python3 docs/examples/serve_client.py PORT '{"id": "r1", "voice": "alice", "prompt": [5, 9, 2], "max_tokens": 64}'

prints each event as a JSON line as it arrives. `generate` is the whole of
it: POST the request, read the server-sent events line by line; closing the
connection (leaving the loop early) cancels the request on the server.
"""
import http.client
import json
import sys


def generate(port, request, host="127.0.0.1", timeout=60):
    """Yields the request's events (dicts) as the server streams them.

    Raises RuntimeError with the server's message when it refuses the request
    (400 bad request, 413 body too large, 429 queue full, 503 shutting down).
    """
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("POST", "/v1/generate", body=json.dumps(request),
                     headers={"Content-Type": "application/json", "Accept": "text/event-stream"})
        response = conn.getresponse()
        if response.status != 200:
            message = json.loads(response.read())["error"]
            raise RuntimeError(f"HTTP {response.status}: {message}")
        # Server-sent events: "data: {...}" lines, each event ended by a blank line.
        for line in response:
            line = line.rstrip(b"\r\n")
            if line.startswith(b"data: "):
                yield json.loads(line[len(b"data: "):])
    finally:
        conn.close()  # mid-stream, this cancels the request and frees its slot


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: serve_client.py PORT REQUEST_JSON")
    try:
        for event in generate(int(sys.argv[1]), json.loads(sys.argv[2])):
            print(json.dumps(event), flush=True)
    except RuntimeError as e:
        sys.exit(str(e))
