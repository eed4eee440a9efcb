#!/usr/bin/env python3
"""peer_compare.py - mstar beside llama.cpp on the same machine, in interleaved rounds.

Runs an mstar-bench measurement and the matching llama.cpp measurement (see
docs/peer-llama-cpp.md for where the peer comes from and its commands
(a)-(d)) once per round, for every case, alternating which engine goes first
from round to round so that drift in the machine's load hits both sides.
After all rounds it prints, per case and side, the median with min and max
over the rounds, and the ratio of the medians labelled "mstar speedup"
(mstar/peer for rates, peer/mstar for times: above 1 means mstar is faster).
Python 3 standard library only (tools/hf_to_gguf.py, run once to make the
peer's GGUF, needs numpy).

Usage:
    python3 tools/peer_compare.py --peer-bin LLAMA_CPP/build/bin [common options] attention
    python3 tools/peer_compare.py --peer-bin ... decode    HF_DIR [--depths 0,4096,16384]
    python3 tools/peer_compare.py --peer-bin ... aggregate HF_DIR [--streams 1,4,16,64]
    python3 tools/peer_compare.py --peer-bin ... prefill   HF_DIR [--prompt 512]

Common options (before the sub-command): --mstar-bench PATH, --rounds N
(default 5), --threads T (default 2), --json, --show-commands, --timeout S.

What each figure measures, and the caveats:

attention  One decode attention call alone: 1 query token against N cached
           K/V entries per KV head, no projections, no KV write.
           mstar: `mstar-bench kernels --kind decode --backend cpu --cache both`
           (median of --repeats calls after a 0.2 s warm-up; "hot" reuses one
           K/V every call, "cold" rotates over a pool four times the last-level
           cache), and its fraction of the triad bandwidth that the same
           `mstar-bench kernels` run measures just before its timing (or
           --bandwidth): on a machine whose memory swings from minute to
           minute, one triad taken at the start misstates every fraction.
           peer: FLASH_ATTN_EXT in `test-backend-ops perf -b CPU --test-file`,
           with a case file this script writes (format: docs/peer-llama-cpp.md
           (a)); the mean of one node repeated up to 8192 times in one graph
           for at least 1 s, same K/V every time: HOT ONLY, so the speedup
           column compares it with mstar's hot figure. test-backend-ops has no
           thread option: it uses every online CPU (hardware_concurrency), not
           --threads. Its per-node thread barrier makes it very sensitive to a
           loaded machine.
decode     Single-stream decode tokens/s at KV depths. mstar: `mstar-bench
           checkpoint --depths` (probe steps timed after filling the cache to
           each depth): 1000 / bounded_ms_per_token (sink 4 + --window, default
           4092, so 4096 entries: past depth 4096 it reads fewer entries than
           the peer) and, like for like with the peer, 1000 /
           full_ms_per_token (a cache holding the whole history). peer:
           `llama-bench -p 0 -n G -d DEPTHS -r 1` per round (random tokens; the
           depth fill is untimed). Both KV caches are --peer-kv (default
           f16): the peer's -ctk/-ctv, mstar-bench checkpoint's --kv-dtype.
aggregate  Aggregate decode tokens/s at S concurrent streams. mstar: the
           `mstar-bench checkpoint --streams` sweep, aggregate_per_s = tokens
           produced / the whole run's wall time (it includes each request's
           short prompt prefill, a shared 64-token voice and sampling); also
           shown: streams x 1000 / step_p50_ms (the median step, i.e. decode).
           peer: `llama-batched-bench` S_TG = S x G / time of the G decode steps
           only (the S prompts of --npp tokens are prefilled before, untimed
           in S_TG). The prompt lengths differ: mstar 16 tokens after a 64-token
           voice, peer --npp (default 512).
prefill    One prompt of P tokens (default 512) into an empty cache, tokens/s.
           mstar: `mstar-bench checkpoint --prefill P` (median of 3 after a
           warm-up, one chunk). peer: `llama-bench -p P -n 0 -r 3` (median of
           its 3 samples, after its warm-up).

General caveats: the peer is llama.cpp built with -march=native; mstar-bench
and the peer are each run as a fresh process per round (mstar-bench
checkpoint also loads the checkpoint each time, untimed). On a shared machine
the figures prove the commands, not the speed.

Exit status: 0 done; 1 a measurement command failed (its stderr tail is
shown); 2 bad usage, or a missing binary, folder or file (named).
"""

import argparse
import hashlib
import json
import os
import re
import shlex
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MSTAR_BENCH_CANDIDATES = ("build/release/apps/mstar-bench", "build/dev/apps/mstar-bench", "build/apps/mstar-bench")
DEFAULT_SHAPES = "128:32:8,128:8:2,64:32:8,128:32:32"  # head_dim:q_heads:kv_heads
DEFAULT_KV_LENS = "512,1024,2048,4096,8192,16384"

# test-backend-ops --test-file format for ggml 0.23.0 (docs/peer-llama-cpp.md (a)).
GGML_OP_FLASH_ATTN_EXT = 74
GGML_TYPE = {"f32": 0, "f16": 1, "bf16": 30}
GGML_PREC_F32 = 10


PEER_INFO = {}  # what the peer says of itself (llama-bench's JSON): build commit, CPU


class UsageError(Exception):
    """Exit 2: bad usage or something missing."""


class CommandFailed(Exception):
    """Exit 1: a measurement command failed."""


# ---------------------------------------------------------------- running


class Runner:
    """Runs commands, records each distinct one, and reports failures."""

    def __init__(self, timeout):
        self.timeout = timeout or None
        self.commands = []  # (setup?, command line), distinct, in first-run order

    def run(self, cmd, what, setup=False):
        line = " ".join(shlex.quote(str(c)) for c in cmd)
        if (setup, line) not in self.commands:
            self.commands.append((setup, line))
        try:
            p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=self.timeout,
                               errors="replace")
        except subprocess.TimeoutExpired as e:
            tail = (e.stderr or b"")
            tail = tail.decode(errors="replace") if isinstance(tail, bytes) else tail
            raise CommandFailed(f"{what}: timed out after {self.timeout} s: {line}\n{tail_of(tail)}")
        except OSError as e:
            raise CommandFailed(f"{what}: cannot run {cmd[0]}: {e}")
        if p.returncode != 0:
            raise CommandFailed(f"{what}: exit status {p.returncode}: {line}\n"
                                f"--- stderr (tail) ---\n{tail_of(p.stderr or p.stdout)}")
        return p.stdout


def tail_of(text, lines=25):
    return "\n".join((text or "").rstrip().splitlines()[-lines:])


def progress(msg):
    print(msg, file=sys.stderr, flush=True)


def json_tables(text):
    """mstar-bench --json prints one JSON array per table, one after another."""
    dec, out, i = json.JSONDecoder(), [], 0
    text = text.strip()
    while i < len(text):
        obj, i = dec.raw_decode(text, i)
        out.append(obj)
        while i < len(text) and text[i].isspace():
            i += 1
    return out


def table_with(tables, column, what):
    for t in tables:
        if t and column in t[0]:
            return t
    raise CommandFailed(f"{what}: no table with a '{column}' column in mstar-bench's output")


def llama_bench_rows(stdout, what):
    try:
        rows = json.loads(stdout)
    except json.JSONDecodeError as e:
        raise CommandFailed(f"{what}: llama-bench printed no JSON ({e})\n{tail_of(stdout)}")
    if not rows:
        raise CommandFailed(f"{what}: llama-bench printed an empty result")
    PEER_INFO.update({"build_commit": rows[0].get("build_commit"), "cpu_info": rows[0].get("cpu_info")})
    return rows


def interleave(rounds, cases, measure_mstar, measure_peer):
    """Per round, every case: mstar then peer in rounds 1, 3, 5..., peer then mstar in 2, 4, ...

    measure_*(case) returns that side's figures for the case; the result maps
    case -> side -> list of them, one per round."""
    samples = {c: {"mstar": [], "peer": []} for c in cases}
    for r in range(rounds):
        order = (("mstar", measure_mstar), ("peer", measure_peer))
        if r % 2:
            order = order[::-1]
        for c in cases:
            for side, fn in order:
                t0 = time.monotonic()
                samples[c][side].append(fn(c))
                progress(f"[round {r + 1}/{rounds}] {case_label(c)}: {side} done in {time.monotonic() - t0:.1f} s")
    return samples


def case_label(c):
    return c if isinstance(c, str) else "d{} h{}/{} n{}".format(*c)


def spread(values):
    """median, min, max of a list (None entries dropped)."""
    v = [x for x in values if x is not None]
    if not v:
        return {"median": None, "min": None, "max": None, "n": 0}
    return {"median": statistics.median(v), "min": min(v), "max": max(v), "n": len(v)}


def ratio(num, den):
    return num / den if num and den else None


# ---------------------------------------------------------------- machine, peer build


def mstar_machine(runner, bench):
    """The machine line mstar-bench prints (markdown output only, so a tiny run)."""
    out = runner.run([bench, "sample", "--vocab", "16", "--repeats", "1"], "mstar-bench machine line", setup=True)
    for line in out.splitlines():
        if line.startswith("machine:"):
            return line[len("machine:"):].strip()
    return "(mstar-bench printed no machine line)"


# ---------------------------------------------------------------- attention


def fa_case_line(D, H, Hkv, n_kv, dtype):
    """One FLASH_ATTN_EXT decode case laid out like llama.cpp's KV cache
    (docs/peer-llama-cpp.md (a)): Q f32 [D, 1, H] permuted, K/V views of a
    cache whose row holds every KV head of a position, f16 mask [N, 1]."""
    es = 2  # f16 and bf16
    scale = struct.unpack("<i", struct.pack("<f", D ** -0.5))[0]  # the float32 bits as an int32
    params = [scale, 0, 0, GGML_PREC_F32]
    q = (GGML_TYPE["f32"], [D, 1, H, 1], [4, 4 * D * H, 4 * D, 4 * D * H])
    kv = (GGML_TYPE[dtype], [D, n_kv, Hkv, 1], [es, es * D * Hkv, es * D, es * D * Hkv * n_kv])
    mask = (GGML_TYPE["f16"], [n_kv, 1, 1, 1], [2, 2 * n_kv, 2 * n_kv, 2 * n_kv])
    srcs = [q, kv, kv, mask]
    parts = [GGML_OP_FLASH_ATTN_EXT, GGML_TYPE["f32"], D, H, 1, 1, len(params), *params, len(srcs)]
    for t, ne, nb in srcs:
        parts += [t, *ne, *nb]
    return " ".join(map(str, parts)) + " " + fa_case_name(D, H, Hkv, n_kv, dtype)


def fa_case_name(D, H, Hkv, n_kv, dtype):
    return f"decode_d{D}_h{H}_kv{Hkv}_n{n_kv}_{dtype}"


FA_LINE = re.compile(r"FLASH_ATTN_EXT\(name=([^,]+),.*?:\s+(\d+) runs -\s+([0-9.]+) us/run")


def attention(args, runner, bench, peer):
    shapes = [tuple(int(x) for x in s.split(":")) for s in parse_strs(args.shapes, "--shapes")]
    for s in shapes:
        if len(s) != 3 or min(s) <= 0 or s[1] % s[2]:
            raise UsageError(f"--shapes: '{':'.join(map(str, s))}' is not head_dim:q_heads:kv_heads "
                             "(q_heads a multiple of kv_heads)")
    lens = parse_ints(args.kv_lens, "--kv-lens", minimum=1)
    cases = [(D, H, K, n) for (D, H, K) in shapes for n in lens]
    tbo = peer / "test-backend-ops"
    bw = args.bandwidth  # 0: each mstar-bench kernels run measures its own
    tmp = None if args.case_file else tempfile.mkdtemp(prefix="peer-compare-fa-")
    case_file = Path(args.case_file) if args.case_file else Path(tmp) / "fa_decode_cases.txt"
    case_file.write_text("".join(fa_case_line(D, H, K, n, args.dtype) + "\n" for (D, H, K, n) in cases))
    try:
        def mstar(c):
            D, H, K, n = c
            out = runner.run([bench, "kernels", "--kind", "decode", "--backend", "cpu", "--cache", "both",
                                    "--head-dim", D, "--q-heads", H, "--kv-heads", K, "--kv-len", n, "--sink", 0,
                                    "--dtype", args.dtype, "--threads", args.threads, "--repeats", args.repeats,
                                    *(["--bandwidth", f"{bw:.3f}"] if bw else []), "--json"],
                             f"mstar-bench kernels {case_label(c)}")
            rows = table_with(json_tables(out), "median_us", "mstar-bench kernels")
            got = {r["cache"]: r for r in rows}
            return {"hot_us": got["hot"]["median_us"], "cold_us": got["cold"]["median_us"],
                    "hot_of_bw": got["hot"]["of_bandwidth"], "cold_of_bw": got["cold"]["of_bandwidth"],
                    "triad_gbs": got["hot"]["gbs"] / got["hot"]["of_bandwidth"]}

        def peer_fa(c):
            name = fa_case_name(*c, args.dtype)
            out = runner.run([tbo, "perf", "-b", "CPU", "-o", "FLASH_ATTN_EXT", "--test-file", case_file,
                                    "-p", f"name={name},"], f"test-backend-ops {name}")
            for m in FA_LINE.finditer(out):
                if m.group(1) == name:
                    return {"us": float(m.group(3)), "runs": int(m.group(2))}
            raise CommandFailed(f"test-backend-ops {name}: no timing line for the case (not supported?)\n"
                                f"{tail_of(out)}")

        samples = interleave(args.rounds, cases, mstar, peer_fa)
    finally:
        if tmp:
            case_file.unlink(missing_ok=True)
            os.rmdir(tmp)
    rows = []
    for c in cases:
        D, H, K, n = c
        ms, ps = samples[c]["mstar"], samples[c]["peer"]
        hot, cold = spread([s["hot_us"] for s in ms]), spread([s["cold_us"] for s in ms])
        pe = spread([s["us"] for s in ps])
        # Each run's fraction is against the triad it ran beside; the cell is their median.
        rows.append({"head_dim": D, "q_heads": H, "kv_heads": K, "kv_len": n, "dtype": args.dtype,
                     "mstar_hot_us": hot, "mstar_cold_us": cold, "peer_us": pe,
                     "mstar_hot_of_bw": statistics.median(s["hot_of_bw"] for s in ms),
                     "mstar_cold_of_bw": statistics.median(s["cold_of_bw"] for s in ms),
                     "speedup_hot": ratio(pe["median"], hot["median"])})
    triads = spread([s["triad_gbs"] for c in cases for s in samples[c]["mstar"]])
    table = md_table(["D", "Hq/Hkv", "KV len", "mstar hot µs", "mstar cold µs", "peer µs (hot)",
                      "mstar speedup (peer/mstar, hot)", "mstar hot of BW", "mstar cold of BW"],
                     [[r["head_dim"], f"{r['q_heads']}/{r['kv_heads']}", r["kv_len"], fmt_spread(r["mstar_hot_us"]),
                       fmt_spread(r["mstar_cold_us"]), fmt_spread(r["peer_us"]), fmt_ratio(r["speedup_hot"]),
                       f"{r['mstar_hot_of_bw']:.2f}", f"{r['mstar_cold_of_bw']:.2f}"] for r in rows])
    triad_note = (f"triad bandwidth {bw:.1f} GB/s (given)" if bw else
                  f"triad bandwidth measured by each mstar-bench kernels run before its timing: "
                  f"{fmt_spread(triads)} GB/s over the runs")
    notes = [f"KV dtype {args.dtype}; mstar {args.threads} threads, {args.repeats} calls per run; {triad_note}.",
             f"peer = test-backend-ops FLASH_ATTN_EXT: hot only (same K/V every run) and it uses every online "
             f"CPU ({os.cpu_count()} here), not --threads.",
             "speedup = peer µs / mstar hot µs (medians); above 1: mstar faster. Fractions of BW: each run's "
             "K/V bytes over its median time, over its triad; the median over the rounds.",
             f"peer case file: {case_file}" + ("" if args.case_file else " (temporary; --case-file keeps one)")]
    if os.cpu_count() != args.threads:
        notes.append(f"WARNING: {os.cpu_count()} online CPUs but --threads {args.threads}: the two sides run "
                     "on different thread counts.")
    return {"rows": rows, "table": table, "notes": notes,
            "settings": {"bandwidth_gbs": bw or triads["median"], "bandwidth_given": bool(bw)}}


# ---------------------------------------------------------------- checkpoints


def model_kind(hf_dir):
    cfg = hf_dir / "config.json"
    if not cfg.is_file():
        raise UsageError(f"{cfg}: not found (HF_DIR must hold config.json)")
    try:
        kind = json.loads(cfg.read_text()).get("model_type")
    except (OSError, json.JSONDecodeError) as e:
        raise UsageError(f"{cfg}: cannot be read: {e}")
    if kind not in ("llama", "qwen2"):
        raise UsageError(f"{cfg}: model_type '{kind}' is neither llama nor qwen2")
    return kind


def gguf_for(args, runner, hf_dir):
    """The peer's GGUF: --gguf if given, else converted once (bf16) into the cache dir."""
    if args.gguf:
        g = Path(args.gguf)
        if not g.is_file():
            raise UsageError(f"--gguf {g}: not found")
        return g
    h = hashlib.sha256(str(hf_dir.resolve()).encode())
    for f in sorted(hf_dir.iterdir()):
        if f.suffix in (".json", ".safetensors") and f.is_file():
            st = f.stat()
            h.update(f"{f.name}:{st.st_size}:{st.st_mtime_ns}".encode())
    cache = Path(args.cache_dir)
    out = cache / f"{hf_dir.resolve().name}-{h.hexdigest()[:12]}-bf16.gguf"
    if out.is_file():
        progress(f"GGUF: reusing {out}")
        return out
    conv = REPO / "tools" / "hf_to_gguf.py"
    if not conv.is_file():
        raise UsageError(f"{conv}: not found")
    cache.mkdir(parents=True, exist_ok=True)
    part = out.with_suffix(".gguf.part")
    progress(f"GGUF: converting {hf_dir} -> {out}")
    try:
        runner.run([numpy_python(), conv, hf_dir, part, "--outtype", "bf16"], "hf_to_gguf.py", setup=True)
    except CommandFailed:
        part.unlink(missing_ok=True)
        raise
    part.rename(out)
    return out


def numpy_python():
    """An interpreter with numpy for tools/hf_to_gguf.py: this one, else Debian's python3."""
    import importlib.util
    if importlib.util.find_spec("numpy") is not None:
        return sys.executable
    for p in ("/usr/bin/python3", "/bin/python3"):
        if os.access(p, os.X_OK) and subprocess.run([p, "-c", "import numpy"], capture_output=True).returncode == 0:
            return p
    raise UsageError("tools/hf_to_gguf.py needs numpy, which no python3 here has (pass --gguf to skip converting)")


def mstar_checkpoint(args, runner, bench, hf_dir, kind, extra, what):
    cmd = [bench, "checkpoint", hf_dir, "--kind", kind, "--backend", "cpu", "--threads", args.threads,
           "--kv-dtype", args.peer_kv, "--activations", args.mstar_activations, *extra, "--json"]
    out = runner.run(cmd, what)
    return json_tables(out)


def decode(args, runner, bench, peer, hf_dir):
    kind = model_kind(hf_dir)
    depths = sorted(set(parse_ints(args.depths, "--depths", minimum=0)))  # mstar fills the cache in this order
    gguf = gguf_for(args, runner, hf_dir)
    dl = ",".join(map(str, depths))

    def mstar(_):
        t = table_with(mstar_checkpoint(args, runner, bench, hf_dir, kind,
                                        ["--streams", "", "--depths", dl, "--window", args.window, "--probe", args.gen],
                                        "mstar-bench checkpoint --depths"), "bounded_ms_per_token", "decode")
        by = {r["length"]: r for r in t}
        return {d: (1000 / by[d]["bounded_ms_per_token"], 1000 / by[d]["full_ms_per_token"]) for d in depths}

    def peer_run(_):
        out = runner.run([peer / "llama-bench", "-m", gguf, "-t", args.threads, "-fa", "1",
                                "-ctk", args.peer_kv, "-ctv", args.peer_kv, "-p", "0", "-n", args.gen, "-d", dl,
                                "-r", "1", "-o", "json"], "llama-bench decode")
        by = {r["n_depth"]: r for r in llama_bench_rows(out, "llama-bench decode")}
        return {d: by[d]["avg_ts"] for d in depths}

    samples = interleave(args.rounds, ["decode"], mstar, peer_run)["decode"]
    rows = []
    for d in depths:
        b = spread([s[d][0] for s in samples["mstar"]])
        f = spread([s[d][1] for s in samples["mstar"]])
        p = spread([s[d] for s in samples["peer"]])
        rows.append({"depth": d, "mstar_bounded_tps": b, "mstar_full_tps": f, "peer_tps": p,
                     "speedup_bounded": ratio(b["median"], p["median"]),
                     "speedup_full": ratio(f["median"], p["median"])})
    table = md_table(["depth", "mstar bounded tok/s", "mstar full tok/s", "peer tok/s",
                      "mstar speedup (bounded/peer)", "mstar speedup (full/peer)"],
                     [[r["depth"], fmt_spread(r["mstar_bounded_tps"]), fmt_spread(r["mstar_full_tps"]),
                       fmt_spread(r["peer_tps"]), fmt_ratio(r["speedup_bounded"]), fmt_ratio(r["speedup_full"])]
                      for r in rows])
    notes = [f"{args.gen} decode steps timed at each depth, single stream, {args.threads} threads; GGUF {gguf}.",
             f"mstar bounded = sink 4 + window {args.window} = {4 + args.window} entries at most (reads fewer than "
             "the peer past that depth); mstar full = a cache keeping the whole history (like for like).",
             f"KV: {args.peer_kv} on both sides, the peer with flash attention on.",
             "speedup = mstar tok/s / peer tok/s (medians); above 1: mstar faster."]
    return {"rows": rows, "table": table, "notes": notes, "settings": {"gguf": str(gguf), "kind": kind}}


def aggregate(args, runner, bench, peer, hf_dir):
    kind = model_kind(hf_dir)
    streams = parse_ints(args.streams, "--streams", minimum=1)
    gguf = gguf_for(args, runner, hf_dir)
    sl = ",".join(map(str, streams))
    ctx = max(streams) * (args.npp + args.gen)

    def mstar(_):
        t = table_with(mstar_checkpoint(args, runner, bench, hf_dir, kind, ["--streams", sl, "--tokens", args.gen],
                                        "mstar-bench checkpoint --streams"), "aggregate_per_s", "aggregate")
        return {r["streams"]: (r["aggregate_per_s"],
                               r["streams"] * 1000 / r["step_p50_ms"] if r["step_p50_ms"] else None) for r in t}

    def batched(pls):
        # batched-bench prints its results through llama.cpp's asynchronous
        # logger, which this version leaks on purpose and never flushes at
        # exit (common/log.cpp, common_log_main), so the last lines can be
        # lost: seen here on a loaded machine. A trailing 1-stream run gives
        # the queue time to drain; its own line is not used.
        out = runner.run([peer / "llama-batched-bench", "-m", gguf, "-t", args.threads, "-tb", args.threads,
                                "-fa", "on", "-ctk", args.peer_kv, "-ctv", args.peer_kv, "-c", ctx, "-b", 2048,
                                "-ub", 512, "-npp", args.npp, "-ntg", args.gen, "-npl", ",".join(map(str, pls + [1])),
                                "--output-format", "jsonl"], "llama-batched-bench")
        got = {}
        for line in out.splitlines():
            line = line.strip()
            if line.startswith("{") and "speed_tg" in line:
                r = json.loads(line)
                got.setdefault(r["pl"], r["speed_tg"])  # the first: the sentinel 1 comes last
        return got

    def peer_run(_):
        got = batched(streams)
        missing = [s for s in streams if s not in got]
        if missing:  # lost to the logger anyway: once more, for those only
            progress(f"llama-batched-bench printed no line for -npl {missing}; running those again")
            got.update({k: v for k, v in batched(missing).items() if k in missing})
            missing = [s for s in streams if s not in got]
        if missing:
            raise CommandFailed(f"llama-batched-bench: no result line for -npl {missing} (twice)")
        return got

    samples = interleave(args.rounds, ["aggregate"], mstar, peer_run)["aggregate"]
    rows = []
    for s in streams:
        a = spread([x[s][0] for x in samples["mstar"]])
        st = spread([x[s][1] for x in samples["mstar"]])
        p = spread([x[s] for x in samples["peer"]])
        rows.append({"streams": s, "mstar_aggregate_tps": a, "mstar_step_tps": st, "peer_s_tg": p,
                     "speedup": ratio(a["median"], p["median"]), "speedup_step": ratio(st["median"], p["median"])})
    table = md_table(["streams", "mstar aggregate tok/s", "mstar S×1000/step p50", "peer S_TG tok/s",
                      "mstar speedup (aggregate/S_TG)", "mstar speedup (step/S_TG)"],
                     [[r["streams"], fmt_spread(r["mstar_aggregate_tps"]), fmt_spread(r["mstar_step_tps"]),
                       fmt_spread(r["peer_s_tg"]), fmt_ratio(r["speedup"]), fmt_ratio(r["speedup_step"])]
                      for r in rows])
    notes = [f"{args.gen} tokens decoded per stream, {args.threads} threads; GGUF {gguf}.",
             f"PROMPT LENGTHS DIFFER: mstar-bench checkpoint's workload prefills 16 prompt tokens per request after "
             f"a shared 64-token voice (fixed in mstar-bench); the peer prefills -npp {args.npp} tokens per stream.",
             "mstar aggregate = tokens / the whole run (prefill, sampling and scheduling included); "
             "step column = streams x 1000 / median step ms. peer S_TG = decode steps only, no sampling "
             f"(-c {ctx}, a KV stream per sequence, {args.peer_kv} KV on both sides).",
             "speedup = mstar / peer (medians); above 1: mstar faster.",
             "The trailing 1 in the peer's -npl is a sentinel run whose line is ignored: batched-bench can lose "
             "its last output lines at exit (see batched() in this script)."]
    return {"rows": rows, "table": table, "notes": notes,
            "settings": {"gguf": str(gguf), "kind": kind, "peer_ctx": ctx}}


def prefill(args, runner, bench, peer, hf_dir):
    kind = model_kind(hf_dir)
    gguf = gguf_for(args, runner, hf_dir)

    def mstar(_):
        extra = ["--streams", "", "--prefill", args.prompt, "--window", args.prompt]
        t = table_with(mstar_checkpoint(args, runner, bench, hf_dir, kind, extra, "mstar-bench checkpoint --prefill"),
                       "tokens_per_s", "prefill")
        return t[0]["tokens_per_s"]

    def peer_run(_):
        out = runner.run([peer / "llama-bench", "-m", gguf, "-t", args.threads, "-fa", "1",
                                "-ctk", args.peer_kv, "-ctv", args.peer_kv, "-p", args.prompt, "-n", "0",
                                "-r", "3", "-o", "json"], "llama-bench prefill")
        r = llama_bench_rows(out, "llama-bench prefill")[0]
        return statistics.median(r["samples_ts"]) if r.get("samples_ts") else r["avg_ts"]

    samples = interleave(args.rounds, ["prefill"], mstar, peer_run)["prefill"]
    m, p = spread(samples["mstar"]), spread(samples["peer"])
    rows = [{"prompt": args.prompt, "mstar_tps": m, "peer_tps": p, "speedup": ratio(m["median"], p["median"])}]
    table = md_table(["prompt tokens", "mstar tok/s", "peer tok/s", "mstar speedup (mstar/peer)"],
                     [[args.prompt, fmt_spread(m), fmt_spread(p), fmt_ratio(rows[0]["speedup"])]])
    notes = [f"One {args.prompt}-token prompt into an empty cache, {args.threads} threads; each side's per-round "
             f"figure is the median of 3 timed passes after a warm-up; GGUF {gguf}.",
             f"KV: {args.peer_kv} on both sides; mstar feeds the prompt as one chunk (query window = "
             "prompt; --window = prompt, so nothing is evicted), the peer in ubatches of 512 (-ub 512).",
             "speedup = mstar / peer (medians); above 1: mstar faster."]
    return {"rows": rows, "table": table, "notes": notes, "settings": {"gguf": str(gguf), "kind": kind}}


# ---------------------------------------------------------------- formatting


def fmt_num(x):
    if x is None:
        return "-"
    a = abs(x)
    return f"{x:.0f}" if a >= 1000 else f"{x:.1f}" if a >= 100 else f"{x:.2f}" if a >= 1 else f"{x:.3f}"


def fmt_spread(s):
    if s["median"] is None:
        return "-"
    if s["n"] == 1:
        return fmt_num(s["median"])
    return f"{fmt_num(s['median'])} [{fmt_num(s['min'])}–{fmt_num(s['max'])}]"


def fmt_ratio(r):
    return "-" if r is None else f"{r:.2f}x"


def md_table(head, rows):
    out = ["| " + " | ".join(head) + " |",
           "|" + "|".join(" --- " if i < 1 else " ---: " for i in range(len(head))) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def parse_strs(s, flag):
    items = [x.strip() for x in s.split(",") if x.strip()]
    if not items:
        raise UsageError(f"{flag}: empty list")
    return items


def parse_ints(s, flag, minimum):
    try:
        v = [int(x) for x in parse_strs(s, flag)]
    except ValueError:
        raise UsageError(f"{flag}: '{s}' is not a comma-separated list of integers")
    if min(v) < minimum:
        raise UsageError(f"{flag}: values must be at least {minimum}")
    return v


# ---------------------------------------------------------------- main


def default_mstar_bench():
    for c in MSTAR_BENCH_CANDIDATES:
        if (REPO / c).is_file():
            return str(REPO / c)
    return str(REPO / MSTAR_BENCH_CANDIDATES[0])


def parse_args(argv):
    ap = argparse.ArgumentParser(description="mstar beside llama.cpp: interleaved rounds, medians, ratios.",
                                 epilog="What each figure measures: see the docstring at the top of this file "
                                        "and docs/peer-llama-cpp.md.")
    ap.add_argument("--peer-bin", required=True, help="llama.cpp's build/bin (llama-bench, llama-batched-bench, "
                                                      "test-backend-ops)")
    ap.add_argument("--mstar-bench", default=None,
                    help="mstar-bench binary (default: the first of " + ", ".join(MSTAR_BENCH_CANDIDATES) +
                         " under the repository that exists)")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    ap.add_argument("--threads", type=int, default=2,
                    help="threads for mstar and llama-bench/batched-bench (default 2)")
    ap.add_argument("--timeout", type=float, default=0, help="seconds any one command may run (default: no limit)")
    ap.add_argument("--json", action="store_true", help="print JSON instead of markdown")
    ap.add_argument("--show-commands", action="store_true", help="list the exact commands run")
    sub = ap.add_subparsers(dest="what", required=True, metavar="{attention,decode,aggregate,prefill}")

    a = sub.add_parser("attention", help="one decode attention call: mstar-bench kernels vs test-backend-ops")
    a.add_argument("--shapes", default=DEFAULT_SHAPES, help=f"head_dim:q_heads:kv_heads,... (default {DEFAULT_SHAPES})")
    a.add_argument("--kv-lens", default=DEFAULT_KV_LENS, help=f"KV lengths (default {DEFAULT_KV_LENS})")
    a.add_argument("--dtype", choices=("f16", "bf16"), default="f16", help="KV dtype (default f16)")
    a.add_argument("--bandwidth", type=float, default=0, help="triad GB/s (default: each mstar-bench kernels run measures its own)")
    a.add_argument("--repeats", type=int, default=20, help="mstar-bench kernels --repeats (default 20)")
    a.add_argument("--case-file", help="write test-backend-ops' case file here and keep it (default: a temporary "
                                       "file, removed at the end)")

    def ckpt(p, gen_default):
        p.add_argument("hf_dir", help="Hugging Face checkpoint folder (config.json model_type llama or qwen2)")
        p.add_argument("--gguf", help="the peer's GGUF of HF_DIR (default: convert once into --cache-dir)")
        p.add_argument("--cache-dir", default=str(Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
                                                  / "mstar" / "peer-gguf"),
                       help="where converted GGUFs are kept (default ~/.cache/mstar/peer-gguf)")
        p.add_argument("--peer-kv", choices=("f16", "bf16"), default="f16",
                       help="the peer's KV cache type (default f16)")
        p.add_argument("--mstar-activations", choices=("f32", "bf16"), default="f32",
                       help="what mstar's matrix products round activations to (default f32; the peer rounds "
                            "them to bf16 for bf16 weights)")
        if gen_default:
            p.add_argument("--gen", type=int, default=gen_default,
                           help=f"decode tokens per stream (default {gen_default})")

    d = sub.add_parser("decode", help="single-stream decode tok/s at depths")
    ckpt(d, 64)
    d.add_argument("--depths", default="0,4096,16384", help="KV depths (default 0,4096,16384)")
    d.add_argument("--window", type=int, default=4092, help="mstar's bounded window; sink 4 + window (default 4092)")
    g = sub.add_parser("aggregate", help="aggregate decode tok/s at several streams")
    ckpt(g, 64)
    g.add_argument("--streams", default="1,4,16,64", help="concurrent streams (default 1,4,16,64)")
    g.add_argument("--npp", type=int, default=512, help="the peer's prompt tokens per stream (default 512)")
    p = sub.add_parser("prefill", help="prefill tok/s of one prompt")
    ckpt(p, 0)
    p.add_argument("--prompt", type=int, default=512, help="prompt tokens (default 512)")
    args = ap.parse_args(argv)
    for name in ("rounds", "threads"):
        if getattr(args, name) < 1:
            ap.error(f"--{name} must be at least 1")
    for name in ("gen", "window", "npp", "prompt", "repeats"):
        if getattr(args, name, 1) < 1:
            ap.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


def check_inputs(args):
    bench = Path(args.mstar_bench or default_mstar_bench())
    if not (bench.is_file() and os.access(bench, os.X_OK)):
        raise UsageError(f"mstar-bench: {bench} not found or not executable (build mstar or pass --mstar-bench)")
    peer = Path(args.peer_bin)
    if not peer.is_dir():
        raise UsageError(f"--peer-bin {peer}: no such folder")
    need = {"attention": ["test-backend-ops"], "decode": ["llama-bench"], "prefill": ["llama-bench"],
            "aggregate": ["llama-batched-bench"]}[args.what]
    for b in need:
        if not os.access(peer / b, os.X_OK):
            raise UsageError(f"{peer / b}: not found or not executable")
    hf_dir = None
    if args.what != "attention":
        hf_dir = Path(args.hf_dir)
        if not hf_dir.is_dir():
            raise UsageError(f"{hf_dir}: no such checkpoint folder")
    return bench, peer, hf_dir


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        bench, peer, hf_dir = check_inputs(args)
        runner = Runner(args.timeout)
        machine = mstar_machine(runner, bench)
        started = time.strftime("%Y-%m-%d %H:%M:%S %z")
        if args.what == "attention":
            res = attention(args, runner, bench, peer)
        else:
            res = {"decode": decode, "aggregate": aggregate, "prefill": prefill}[args.what](args, runner, bench,
                                                                                             peer, hf_dir)
    except UsageError as e:
        print(f"peer_compare: {e}", file=sys.stderr)
        return 2
    except CommandFailed as e:
        print(f"peer_compare: {e}", file=sys.stderr)
        return 1
    head = {"subcommand": args.what, "machine": machine, "started": started, "rounds": args.rounds,
            "threads": args.threads, "mstar_bench": str(bench), "peer_bin": str(peer),
            "target": str(hf_dir) if hf_dir else None, "online_cpus": os.cpu_count(),
            "load_average": os.getloadavg(), "peer": PEER_INFO}
    if args.json:
        out = {**head, **res["settings"], "notes": res["notes"], "rows": res["rows"]}
        if args.show_commands:
            out["commands"] = {"setup": [c for s, c in runner.commands if s],
                               "per_round": [c for s, c in runner.commands if not s]}
        print(json.dumps(out, indent=2))
        return 0
    print(f"# peer_compare {args.what}" + (f": {hf_dir}" if hf_dir else ""))
    print()
    print(f"machine: {machine}")
    print(f"started {started}; {args.rounds} interleaved round(s) (mstar first in rounds 1, 3, ..., "
          "the peer first in 2, 4, ...); "
          f"load average at the end {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"mstar-bench: {bench}; peer: {peer}" +
          (f" (build {PEER_INFO['build_commit']}, {PEER_INFO['cpu_info']})" if PEER_INFO else ""))
    if hasattr(args, "mstar_activations"):
        print(f"mstar activations: {args.mstar_activations} (mstar-bench checkpoint --activations)")
    print("cells: median [min–max] over the rounds")
    print()
    print(res["table"])
    print()
    for n in res["notes"]:
        print(f"- {n}")
    if args.show_commands:
        print()
        for title, setup in (("Setup commands (once)", True), ("Commands run in every round", False)):
            print(f"{title}:")
            print()
            for s, c in runner.commands:
                if s == setup:
                    print(f"    {c}")
            print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
