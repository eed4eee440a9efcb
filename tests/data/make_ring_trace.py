#!/usr/bin/env python3
"""Writes ring_rollout_f16.json (a ring-KV replay trace) and its expected
output, computed here independently of mstar: for each session and layer the
committed frames are kept as a plain dict, and what frame f sees is worked out
from the definition (frames on the write clock, g % dilation == 0, whose
bucket is among the last ring_buckets before f's, less the one f overwrites),
plus f itself. Standard library only. Rerun: python3 tests/data/make_ring_trace.py"""
import json, math, random, struct, os

rng = random.Random(7)
L, H, HQ, D, T = 2, 1, 2, 3, 2
GEOS = [{"ring_frames": 3, "ring_buckets": 3, "pinned_dilation": 1},
        {"ring_frames": 6, "ring_buckets": 2, "pinned_dilation": 2}]

def f16(x):
    return struct.unpack("<e", struct.pack("<e", x))[0]

def rnd(*shape):
    if not shape:
        return round(rng.uniform(-1.5, 1.5), 4)
    return [rnd(*shape[1:]) for _ in range(shape[0])]

config = {"num_layers": L, "num_kv_heads": H, "head_dim": D, "tokens_per_frame": T, "layers": GEOS,
          "num_sessions": 2, "dtype": "f16"}
trace = {"resource": "ring_kv", "config": config, "query_heads": HQ, "steps": []}
expected = {"comment": "computed by make_ring_trace.py's own model", "steps": []}
committed = {}  # (rid, layer) -> {frame: (k[H][T][D], v)}
sessions = {}

def visible_frames(rid, layer, f):
    g = GEOS[layer]
    d, nb = g["pinned_dilation"], g["ring_buckets"]
    bucket = -(-f // d)
    write_step = f % d == 0
    return [c for c in sorted(committed.get((rid, layer), {})) if c < f and c % d == 0
            and c // d >= bucket - nb + (1 if write_step else 0)]

def attend(q, keys, vals):
    s = [sum(a * b for a, b in zip(q, k)) / math.sqrt(D) for k in keys]
    m = max(s)
    e = [math.exp(x - m) for x in s]
    z = sum(e)
    return [sum(w * v[i] for w, v in zip(e, vals)) / z for i in range(D)]

def step(rows, passes=2, ingest=None, remove=None, admit=None):
    st = {"rows": [dict(r) for r in rows]}
    if ingest: st["ingest"] = ingest
    if remove: st["remove"] = remove
    for rid in (remove or []):
        sessions.pop(rid, None)
        for l in range(L): committed.pop((rid, l), None)
    if admit is not None:  # expected refusal: no passes run
        st["passes"] = []
        trace["steps"].append(st)
        expected["steps"].append({"admit": admit})
        return
    for r in rows:
        if "request" in r and r["request"] not in sessions:
            sessions[r["request"]] = min(set(range(2)) - set(sessions.values()))
    st["passes"] = []
    out = {"admit": {"outcome": "ok", "request": "", "reason": ""}, "passes": []}
    for p in range(passes):
        commit = p == passes - 1
        prow, orow = [], []
        for r in rows:
            q, k, v = rnd(L, T, HQ, D), rnd(L, H, T, D), rnd(L, H, T, D)
            prow.append({"q": q, "k": k, "v": v})
            rid = r.get("request", "")
            res = {"request": rid, "session": sessions.get(rid, 2), "frame": r["frame"]}
            if rid:
                outs = []
                for l in range(L):
                    cur_k = [[list(map(f16, k[l][h][t])) for t in range(T)] for h in range(H)]
                    cur_v = [[list(map(f16, v[l][h][t])) for t in range(T)] for h in range(H)]
                    per_t = []
                    for t in range(T):
                        per_h = []
                        for hq in range(HQ):
                            h = hq // (HQ // H)
                            keys, vals = [], []
                            for g in visible_frames(rid, l, r["frame"]):
                                gk, gv = committed[(rid, l)][g]
                                keys += gk[h]; vals += gv[h]
                            keys += cur_k[h]; vals += cur_v[h]
                            per_h.append(attend(q[l][t][hq], keys, vals))
                        per_t.append(per_h)
                    outs.append(per_t)
                    if commit:
                        committed.setdefault((rid, l), {})[r["frame"]] = (cur_k, cur_v)
                res["out"] = outs
            orow.append(res)
        st["passes"].append({"commit": commit, "rows": prow})
        out["passes"].append({"commit": commit, "rows": orow})
    trace["steps"].append(st)
    expected["steps"].append(out)

step([{"request": "a", "frame": 0}], ingest=["a", "b", "c"])
step([{"request": "b", "frame": 5}, {"request": "a", "frame": 1}])
for f in range(2, 9):
    rows = [{"request": "a", "frame": f}, {"padding": True, "frame": 0}, {"request": "b", "frame": f + 4}]
    step(rows if f % 3 else rows[::-1], passes=1 + f % 3)
step([{"request": "c", "frame": 0}], admit={"outcome": "retry", "request": "c",
     "reason": "request 'c' needs a session: 0 of 2 are free and this step needs 1"})
step([{"request": "a", "frame": 10}], admit={"outcome": "refused", "request": "a",
     "reason": "request 'a' (segment 'frame'): broken frame clock: frame 9 was expected but frame 10 was declared "
               "(a skipped frame; it would select the wrong ring slot and rewrite history)"})
step([{"request": "c", "frame": 0}, {"request": "a", "frame": 9}], remove=["b"])

here = os.path.dirname(os.path.abspath(__file__))
json.dump(trace, open(os.path.join(here, "ring_rollout_f16.json"), "w"))
json.dump(expected, open(os.path.join(here, "ring_rollout_f16.expected.json"), "w"))
