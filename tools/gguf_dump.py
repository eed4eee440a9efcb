#!/usr/bin/env python3
"""gguf_dump.py - read a GGUF file: print its header, or one tensor as float32.

An independent reader, written from the GGUF specification (ggml's docs/gguf.md),
sharing no code with tools/hf_to_gguf.py's writer; dequantisation is
tools/gguf_blocks.py.  numpy and the standard library only.  mstar's C++
tests use it as the reference reader and dequantiser.

    python3 tools/gguf_dump.py FILE --json
    python3 tools/gguf_dump.py FILE --tensor NAME --out PATH

--json prints one JSON object:
    {"version": 3, "alignment": 32, "data_offset": N, "file_size": N,
     "metadata": {key: value, ...},
     "tensors": [{"name", "type" (ggml type number), "type_name",
                  "dims" (as stored: ne[0] first), "offset" (as stored, from the
                  start of the data section), "nbytes"}, ...]}
  Metadata values are JSON numbers, booleans and strings; arrays are lists,
  except arrays longer than 16, which are summarised as
  {"type": element type name, "count": N, "head": [first 16 values]}.
  Floats that JSON cannot hold (inf, nan) are written as the strings
  "inf", "-inf", "nan".

--tensor NAME --out PATH writes that tensor's values dequantised to float32,
little-endian, raw, in stored order (ne[0] fastest).  Supported types: F32,
F16, BF16, Q4_0, Q8_0, Q4_K, Q5_K, Q6_K.

The reader checks what a loader must: magic, version 2 or 3, value types,
string lengths, that every tensor's offset is aligned and its bytes lie
inside the file.  Anything else exits with status 1 and a message naming
the problem; usage errors exit with status 2.
"""

import argparse
import json
import math
import mmap
import os
import struct
import sys

sys.dont_write_bytecode = True  # keep the source tree free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_blocks as gb  # noqa: E402  (first: it finds a python3 with numpy)
import numpy as np  # noqa: E402

# GGUF metadata value types: number -> (name, struct format or None)
VTYPES = {
    0: ("uint8", "<B"), 1: ("int8", "<b"), 2: ("uint16", "<H"), 3: ("int16", "<h"),
    4: ("uint32", "<I"), 5: ("int32", "<i"), 6: ("float32", "<f"), 7: ("bool", "<B"),
    8: ("string", None), 9: ("array", None), 10: ("uint64", "<Q"), 11: ("int64", "<q"),
    12: ("float64", "<d"),
}
NP_DTYPE = {0: "<u1", 1: "<i1", 2: "<u2", 3: "<i2", 4: "<u4", 5: "<i4", 6: "<f4", 7: "<u1",
            10: "<u8", 11: "<i8", 12: "<f8"}
SUMMARY_LEN = 16


class GGUFError(Exception):
    pass


class Reader:
    def __init__(self, buf):
        self.buf = buf
        self.pos = 0

    def take(self, n, what):
        if n < 0 or self.pos + n > len(self.buf):
            raise GGUFError(f"truncated file: {what} needs {n} bytes at offset {self.pos}, "
                            f"file has {len(self.buf)}")
        b = self.buf[self.pos:self.pos + n]
        self.pos += n
        return b

    def scalar(self, fmt, what):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt), what))[0]

    def string(self, what):
        n = self.scalar("<Q", what + " length")
        raw = self.take(n, what)
        try:
            return bytes(raw).decode("utf-8")
        except UnicodeDecodeError as e:
            raise GGUFError(f"{what}: not UTF-8 ({e})")

    def value(self, vtype, what):
        if vtype not in VTYPES:
            raise GGUFError(f"{what}: unknown value type {vtype}")
        name, fmt = VTYPES[vtype]
        if vtype == 8:
            return self.string(what)
        if vtype == 9:
            etype = self.scalar("<I", what + " element type")
            count = self.scalar("<Q", what + " element count")
            if etype not in VTYPES:
                raise GGUFError(f"{what}: unknown array element type {etype}")
            if etype in NP_DTYPE:
                dt = np.dtype(NP_DTYPE[etype])
                raw = self.take(count * dt.itemsize, what)
                arr = np.frombuffer(raw, dtype=dt)
                vals = [bool(v) for v in arr] if etype == 7 else arr.tolist()
                return {"__array__": VTYPES[etype][0], "values": vals}
            vals = [self.value(etype, f"{what}[{i}]") for i in range(count)]
            return {"__array__": VTYPES[etype][0], "values": vals}
        v = self.scalar(fmt, what)
        if vtype == 7:
            if v not in (0, 1):
                raise GGUFError(f"{what}: bool byte {v}")
            return bool(v)
        return v


def parse(buf):
    """Parse header, metadata and tensor infos of a GGUF image (bytes-like)."""
    r = Reader(buf)
    magic = bytes(r.take(4, "magic"))
    if magic != b"GGUF":
        raise GGUFError(f"not a GGUF file (magic {magic!r})")
    version = r.scalar("<I", "version")
    if version not in (2, 3):
        raise GGUFError(f"GGUF version {version} is not supported (2, 3)")
    n_tensors = r.scalar("<Q", "tensor count")
    n_kv = r.scalar("<Q", "metadata count")
    meta = {}
    for i in range(n_kv):
        key = r.string(f"metadata key #{i}")
        vtype = r.scalar("<I", f"type of {key}")
        if key in meta:
            raise GGUFError(f"metadata key {key!r} appears twice")
        meta[key] = r.value(vtype, key)
    alignment = meta.get("general.alignment", 32)
    if not isinstance(alignment, int) or isinstance(alignment, bool) or alignment <= 0 \
            or alignment & (alignment - 1):
        raise GGUFError(f"general.alignment {alignment!r} is not a power of two")
    tensors = []
    names = set()
    for i in range(n_tensors):
        name = r.string(f"tensor name #{i}")
        n_dims = r.scalar("<I", f"{name} n_dims")
        if n_dims > 4:
            raise GGUFError(f"{name}: {n_dims} dimensions (at most 4)")
        dims = [r.scalar("<Q", f"{name} dim {d}") for d in range(n_dims)]
        gtype = r.scalar("<I", f"{name} type")
        offset = r.scalar("<Q", f"{name} offset")
        if name in names:
            raise GGUFError(f"tensor {name!r} appears twice")
        names.add(name)
        tensors.append({"name": name, "type": gtype, "dims": dims, "offset": offset})
    data_offset = r.pos + (-r.pos) % alignment
    for t in tensors:
        n = 1
        for d in t["dims"]:
            n *= d
        t["n_elements"] = n
        t["type_name"] = gb.type_name(t["type"])
        if t["type"] in gb.TYPES:
            bs = gb.block_size(t["type"])
            if t["dims"] and t["dims"][0] % bs:
                raise GGUFError(f"{t['name']}: ne[0] {t['dims'][0]} is not a multiple of the "
                                f"{t['type_name']} block {bs}")
            t["nbytes"] = gb.nbytes(t["type"], n)
        else:
            t["nbytes"] = None
        if t["offset"] % alignment:
            raise GGUFError(f"{t['name']}: offset {t['offset']} is not a multiple of {alignment}")
        if t["nbytes"] is not None and data_offset + t["offset"] + t["nbytes"] > len(buf):
            raise GGUFError(f"{t['name']}: bytes {t['offset']}..{t['offset'] + t['nbytes']} of the "
                            f"data section run past the end of the file")
    return {"version": version, "alignment": alignment, "data_offset": data_offset,
            "metadata": meta, "tensors": tensors}


def _json_value(v):
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, dict) and "__array__" in v:
        vals = v["values"]
        if len(vals) > SUMMARY_LEN:
            return {"type": v["__array__"], "count": len(vals),
                    "head": [_json_value(x) for x in vals[:SUMMARY_LEN]]}
        return [_json_value(x) for x in vals]
    return v


def summary(info, file_size):
    return {
        "version": info["version"],
        "alignment": info["alignment"],
        "data_offset": info["data_offset"],
        "file_size": file_size,
        "metadata": {k: _json_value(v) for k, v in info["metadata"].items()},
        "tensors": [{"name": t["name"], "type": t["type"], "type_name": t["type_name"],
                     "dims": t["dims"], "offset": t["offset"], "nbytes": t["nbytes"]}
                    for t in info["tensors"]],
    }


def tensor_f32(buf, info, name):
    for t in info["tensors"]:
        if t["name"] == name:
            break
    else:
        raise GGUFError(f"no tensor named {name!r}")
    if t["type"] not in gb.TYPES:
        raise GGUFError(f"{name}: ggml type {t['type']} is not supported "
                        f"(have {', '.join(v[0] for v in gb.TYPES.values())})")
    start = info["data_offset"] + t["offset"]
    raw = np.frombuffer(buf, dtype=np.uint8, count=t["nbytes"], offset=start)
    return gb.dequantize(raw, t["type"], t["n_elements"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file")
    ap.add_argument("--json", action="store_true", help="print header, metadata and tensor table")
    ap.add_argument("--tensor", metavar="NAME", help="tensor to write as float32")
    ap.add_argument("--out", metavar="PATH", help="where --tensor's values go")
    args = ap.parse_args()
    if not args.json and args.tensor is None:
        ap.error("give --json or --tensor NAME --out PATH")
    if (args.tensor is None) != (args.out is None):
        ap.error("--tensor and --out go together")
    try:
        with open(args.file, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
    except OSError as e:
        print(f"error: {args.file}: {e.strerror}", file=sys.stderr)
        return 1
    try:
        info = parse(buf)
        if args.json:
            try:
                sys.stdout.write(json.dumps(summary(info, size), indent=1, ensure_ascii=False) + "\n")
                sys.stdout.flush()
            except BrokenPipeError:      # e.g. piped into head
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        if args.tensor is not None:
            vals = tensor_f32(buf, info, args.tensor)
            with open(args.out, "wb") as f:
                f.write(vals.astype("<f4").tobytes())
    except GGUFError as e:
        print(f"error: {args.file}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
