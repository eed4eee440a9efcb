#!/usr/bin/env python3
"""Writes random_gqa_f16.json (a bounded-KV replay trace) and its expected
output, computed here by an implementation independent of mstar: each
request's full stream is kept, the retained entries are picked straight from
the definition (first `sink`, last `window`), and attention is dense softmax.
Standard library only. Rerun: python3 tests/data/make_random_trace.py"""
import json, math, random, struct, os

rng = random.Random(2024)
L, H, HQ, D, R = 2, 2, 4, 5, 2
SINK, WINDOW = 3, 4          # window counts the step's own entries
DTYPE = "f16"

def f16(x):  # what storing x as IEEE half and reading it back gives
    return struct.unpack("<e", struct.pack("<e", x))[0]

def rnd(*shape):
    if not shape:
        return round(rng.uniform(-1.5, 1.5), 4)
    return [rnd(*shape[1:]) for _ in range(shape[0])]

config = {"num_layers": L, "num_heads": H, "head_dim": D, "rows_per_request": R,
          "max_source_len": 6, "retention": {"sink": SINK, "window": WINDOW, "window_includes_step": True},
          "max_slots": 3, "dtype": DTYPE}
src_len = 5
src_k, src_v = rnd(L, R, H, src_len, D), rnd(L, R, H, src_len, D)
trace = {"resource": "bounded_kv", "config": config, "query_heads": HQ,
         "sources": [{"id": 1, "keys": src_k, "values": src_v}], "steps": []}

# streams[rid][layer][row][head] = list of (k, v) in stream order, as stored
streams, written, source_of = {}, {}, {}
def start(rid, with_source):
    source_of[rid] = with_source
    written[rid] = 0
    streams[rid] = [[[[(list(map(f16, src_k[l][r][h][t])), list(map(f16, src_v[l][r][h][t])))
                        for t in range(src_len if with_source else 0)]
                       for h in range(H)] for r in range(R)] for l in range(L)]

def attend(q, keys, vals):
    s = [sum(a * b for a, b in zip(q, k)) / math.sqrt(D) for k in keys]
    if not s:
        return [0.0] * D
    m = max(s)
    e = [math.exp(x - m) for x in s]
    z = sum(e)
    return [sum(w * v[d] for w, v in zip(e, vals)) / z for d in range(D)]

expected = {"comment": "computed by make_random_trace.py's own naive implementation", "steps": []}
start("a", True); start("b", False)
steps = [[("a", 4), ("b", 2)], [("a", 1), ("b", 0)], [("a", 6)], [("b", 3), ("a", 2)], [("a", 1), ("b", 5)],
         [("b", 1)], [("a", 3), ("b", 2)]]
for i, seg in enumerate(steps):
    st = {"mask": "causal" if i % 2 == 0 else "full", "segments": [], "positions": {}, "rows": []}
    if i == 0:
        st["ingest"] = ["a", "b"]
    out_rows = []
    for rid, span in seg:
        q_len = span if st["mask"] == "causal" else max(1, span // 2)
        if st["mask"] == "causal" and span == 0:
            raise SystemExit("causal steps need a span")
        n_src = src_len if source_of[rid] else 0
        st["segments"].append({"request": rid, "label": "step", "span": span})
        st["positions"][rid] = {"source_len": n_src, "written": written[rid], "source": 1 if source_of[rid] else 0}
        for r in range(R):
            row = {"request": rid, "q": rnd(L, q_len, HQ, D)}
            if span:
                row["k"], row["v"] = rnd(L, span, H, D), rnd(L, span, H, D)
            st["rows"].append(row)
            outs = []
            for l in range(L):
                per_tok = []
                for t in range(q_len):
                    per_head = []
                    for hq in range(HQ):
                        h = hq // (HQ // H)
                        hist = streams[rid][l][r][h]
                        n = len(hist)
                        W = WINDOW - span
                        keep = [p for p in range(n) if p < SINK or (W > 0 and p >= n - W)]
                        keys = [hist[p][0] for p in keep]
                        vals = [hist[p][1] for p in keep]
                        vis = span - q_len + t + 1 if st["mask"] == "causal" else span
                        keys += [row["k"][l][j][h] for j in range(vis)]
                        vals += [row["v"][l][j][h] for j in range(vis)]
                        per_head.append(attend(row["q"][l][t][hq], keys, vals))
                    per_tok.append(per_head)
                outs.append(per_tok)
            out_rows.append({"request": rid, "out": outs})
        for r in range(R):
            row = st["rows"][-R + r]
            for l in range(L):
                for h in range(H):
                    for j in range(span):
                        streams[rid][l][r][h].append((list(map(f16, row["k"][l][j][h])), list(map(f16, row["v"][l][j][h]))))
        written[rid] += span
    trace["steps"].append(st)
    expected["steps"].append({"admit": {"outcome": "ok", "request": "", "reason": ""}, "rows": out_rows})

here = os.path.dirname(os.path.abspath(__file__))
json.dump(trace, open(os.path.join(here, "random_gqa_f16.json"), "w"))
json.dump(expected, open(os.path.join(here, "random_gqa_f16.expected.json"), "w"))
