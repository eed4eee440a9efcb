#!/usr/bin/env python3
"""hf_to_gguf.py - convert a Hugging Face llama / qwen2 checkpoint folder to GGUF v3.

Purpose: run llama.cpp (the peer engine, see docs/peer-llama-cpp.md) on the very
same weights that mstar loads, so the two can be measured side by side.
Needs only the Python standard library and numpy.

Usage:
    python3 tools/hf_to_gguf.py HF_DIR OUT.gguf [--outtype f16|bf16|f32] [--name NAME]

HF_DIR holds config.json and either model.safetensors or the shards listed in
model.safetensors.index.json.  Source tensors may be F32, F16 or BF16.
config.json's model_type must be "llama" or "qwen2".

What is written (GGUF v3, little-endian, alignment 32):
  * metadata: general.architecture (llama | qwen2), general.name,
    general.file_type, {arch}.context_length / embedding_length / block_count /
    feed_forward_length / attention.head_count / attention.head_count_kv /
    attention.layer_norm_rms_epsilon / rope.freq_base / rope.dimension_count /
    vocab_size, attention.key_length + value_length when head_dim differs
    from hidden_size / num_attention_heads, and rope scaling:
      - "linear": rope.scaling.type = "linear", rope.scaling.factor
      - "llama3": no scaling keys; instead a tensor rope_freqs.weight (f32,
        head_dim/2 entries) of per-frequency divisors, computed from the llama3
        formula: factor_i = inv_freq_i / inv_freq_llama3_i, which llama.cpp's
        rope divides each rotation frequency by.
  * a SYNTHETIC tokenizer (the checkpoint's real tokenizer is not converted):
    tokenizer.ggml.model = "llama" (sentencepiece-style), one token per id named
    "<tN>", byte tokens "<0x00>".."<0xFF>" on the first 256 ids that are not
    special (only "<0x0A>" in a vocabulary too small for all 256; llama.cpp
    looks the newline token up at load time), bos/eos ids from
    config.json marked as control tokens, add_bos/add_eos false.  Good for
    benchmarking and for feeding token ids; text prompts are meaningless.
  * tensors, in llama.cpp's names: token_embd, blk.N.attn_norm, attn_q/k/v
    (+ .bias when the checkpoint has them: qwen2, or llama with
    attention_bias), attn_output, ffn_norm, ffn_gate/up/down, output_norm,
    and output.weight unless the embeddings are tied (then llama.cpp reuses
    token_embd).  1-D tensors (norms, biases, rope_freqs) are always f32; 2-D
    tensors get --outtype (bf16 is rounded to nearest even from f32/f16
    sources and copied bit-exactly from bf16 sources).

Rotary layout (llama only): Hugging Face's llama applies rope with rotate_half,
pairing dimension i with i + D/2 inside each head of size D.  llama.cpp's llama
uses the interleaved ("normal") layout, pairing 2i with 2i+1.  So the rows of
q_proj and k_proj (and their biases, if any) are permuted per head:

    new_row[h*D + 2*i]     = old_row[h*D + i]
    new_row[h*D + 2*i + 1] = old_row[h*D + i + D/2]        for i < D/2

i.e. w.reshape(n_heads, 2, D/2, cols).swapaxes(1, 2).reshape(rows, cols).
Since q.k is a sum over the same permutation of both vectors, attention scores
are unchanged.  qwen2 runs with NEOX rope (rotate_half) in llama.cpp and is
not permuted.

The file is written in one streaming pass: header, metadata and tensor table
first (sizes are known from the safetensors headers), then each tensor is read
from its memory-mapped shard, converted in row chunks and written, so peak
memory stays near one tensor (a q/k projection is permuted whole).
"""

import argparse
import json
import math
import os
import struct
import sys

import numpy as np

GGUF_MAGIC = b"GGUF"
GGUF_VERSION = 3
ALIGNMENT = 32

# GGUF metadata value types
T_UINT8, T_INT8, T_UINT16, T_INT16, T_UINT32, T_INT32, T_FLOAT32, T_BOOL, \
    T_STRING, T_ARRAY, T_UINT64, T_INT64, T_FLOAT64 = range(13)

# ggml tensor types
GGML_F32, GGML_F16, GGML_BF16 = 0, 1, 30
# llama_ftype (general.file_type)
FTYPE = {"f32": 0, "f16": 1, "bf16": 32}
OUT_GGML = {"f32": GGML_F32, "f16": GGML_F16, "bf16": GGML_BF16}
ELEM_SIZE = {GGML_F32: 4, GGML_F16: 2, GGML_BF16: 2}

# token types (llama_token_type)
TOK_NORMAL, TOK_UNKNOWN, TOK_CONTROL, TOK_BYTE = 1, 2, 3, 6

CHUNK_ELEMS = 1 << 24  # convert big tensors this many elements at a time


# ----------------------------------------------------------------- safetensors
class SafeTensors:
    """Lazy view of one or more safetensors files: name -> (dtype, shape, array getter)."""

    DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": np.uint16}

    def __init__(self, folder):
        index = os.path.join(folder, "model.safetensors.index.json")
        single = os.path.join(folder, "model.safetensors")
        if os.path.exists(index):
            with open(index) as f:
                files = sorted(set(json.load(f)["weight_map"].values()))
        elif os.path.exists(single):
            files = ["model.safetensors"]
        else:
            sys.exit(f"error: no model.safetensors or model.safetensors.index.json in {folder}")
        self.entries = {}
        for fn in files:
            path = os.path.join(folder, fn)
            with open(path, "rb") as f:
                (hlen,) = struct.unpack("<Q", f.read(8))
                header = json.loads(f.read(hlen))
            base = 8 + hlen
            for name, meta in header.items():
                if name == "__metadata__":
                    continue
                dt = meta["dtype"]
                if dt not in self.DTYPES:
                    sys.exit(f"error: tensor {name} has dtype {dt}; only F32/F16/BF16 are supported")
                begin, end = meta["data_offsets"]
                self.entries[name] = (path, dt, tuple(meta["shape"]), base + begin, end - begin)

    def __contains__(self, name):
        return name in self.entries

    def shape(self, name):
        return self.entries[name][2]

    def raw(self, name):
        """Memory-mapped array in the file's own dtype (BF16 as uint16)."""
        path, dt, shape, off, nbytes = self.entries[name]
        # a fresh map per tensor: it is released (and its pages leave our RSS)
        # as soon as the caller drops the array
        m = np.memmap(path, dtype=self.DTYPES[dt], mode="r", offset=off, shape=shape)
        return m, dt


def to_f32(a, dt):
    if dt == "BF16":
        return (a.astype(np.uint32) << 16).view(np.float32)
    return a.astype(np.float32)


def f32_to_bf16_bits(a):
    """float32 -> bf16 bit pattern (uint16), round to nearest even, NaN kept quiet."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    r = ((u + np.uint32(0x7FFF) + ((u >> 16) & np.uint32(1))) >> 16).astype(np.uint16)
    nan = (u & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
    if nan.any():
        r[nan] = ((u[nan] >> 16) | np.uint32(0x40)).astype(np.uint16)
    return r


def convert_block(a, dt, gtype):
    """Convert a block of source values to the bytes of ggml type gtype."""
    if gtype == GGML_BF16 and dt == "BF16":
        return np.ascontiguousarray(a).tobytes()
    if gtype == GGML_F16 and dt == "F16":
        return np.ascontiguousarray(a).tobytes()
    f = to_f32(a, dt)
    if gtype == GGML_F32:
        return np.ascontiguousarray(f, dtype="<f4").tobytes()
    if gtype == GGML_F16:
        return np.ascontiguousarray(f.astype("<f2")).tobytes()
    return f32_to_bf16_bits(f).tobytes()


def rope_permute(a, n_heads):
    """rotate_half row layout -> interleaved row layout, per head (see module doc)."""
    rows = a.shape[0]
    d = rows // n_heads
    rest = a.shape[1:]
    return np.ascontiguousarray(
        a.reshape(n_heads, 2, d // 2, *rest).swapaxes(1, 2).reshape(rows, *rest))


# ----------------------------------------------------------------- GGUF writing
def pack_str(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


SCALAR_FMT = {T_UINT8: "<B", T_INT8: "<b", T_UINT16: "<H", T_INT16: "<h", T_UINT32: "<I",
              T_INT32: "<i", T_FLOAT32: "<f", T_BOOL: "<?", T_UINT64: "<Q", T_INT64: "<q",
              T_FLOAT64: "<d"}
NP_FMT = {T_INT32: "<i4", T_FLOAT32: "<f4", T_UINT32: "<u4"}


def pack_value(vtype, value, elem_type=None):
    if vtype == T_STRING:
        return pack_str(value)
    if vtype == T_ARRAY:
        out = [struct.pack("<IQ", elem_type, len(value))]
        if elem_type == T_STRING:
            out.extend(pack_str(s) for s in value)
        else:
            out.append(np.asarray(value, dtype=NP_FMT[elem_type]).tobytes())
        return b"".join(out)
    return struct.pack(SCALAR_FMT[vtype], value)


class Tensor:
    def __init__(self, name, np_shape, gtype, produce):
        self.name = name
        self.np_shape = tuple(np_shape)   # row-major (numpy) shape
        self.gtype = gtype
        self.produce = produce            # generator of byte blocks
        self.nbytes = ELEM_SIZE[gtype] * int(np.prod(self.np_shape))


def pad(n):
    return (ALIGNMENT - n % ALIGNMENT) % ALIGNMENT


def write_gguf(path, kvs, tensors):
    with open(path, "wb") as f:
        f.write(GGUF_MAGIC + struct.pack("<IQQ", GGUF_VERSION, len(tensors), len(kvs)))
        for key, vtype, value, elem in kvs:
            f.write(pack_str(key) + struct.pack("<I", vtype) + pack_value(vtype, value, elem))
        offset = 0
        for t in tensors:
            ne = list(reversed(t.np_shape))  # ggml ne[0] is the fastest-varying dimension
            f.write(pack_str(t.name) + struct.pack("<I", len(ne)))
            f.write(struct.pack(f"<{len(ne)}Q", *ne))
            f.write(struct.pack("<IQ", t.gtype, offset))
            offset += t.nbytes + pad(t.nbytes)
        f.write(b"\0" * pad(f.tell()))
        for i, t in enumerate(tensors):
            written = 0
            for block in t.produce():
                f.write(block)
                written += len(block)
            if written != t.nbytes:
                raise RuntimeError(f"{t.name}: wrote {written} bytes, expected {t.nbytes}")
            f.write(b"\0" * pad(t.nbytes))
            print(f"[{i + 1:4d}/{len(tensors)}] {t.name:32s} {str(t.np_shape):20s} "
                  f"{ {GGML_F32: 'f32', GGML_F16: 'f16', GGML_BF16: 'bf16'}[t.gtype]}",
                  file=sys.stderr)


# ----------------------------------------------------------------- model mapping
def first_int(v):
    if isinstance(v, list):
        v = v[0] if v else None
    return v if isinstance(v, int) else None


def llama3_rope_factors(cfg_rs, head_dim, theta):
    """Per-frequency divisors that turn HF's llama3 inv_freq into llama.cpp's freq_factors."""
    factor = float(cfg_rs["factor"])
    low = float(cfg_rs.get("low_freq_factor", 1.0))
    high = float(cfg_rs.get("high_freq_factor", 4.0))
    old_ctx = float(cfg_rs.get("original_max_position_embeddings", 8192))
    inv_freq = 1.0 / theta ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    wavelen = 2.0 * math.pi / inv_freq
    low_wl = old_ctx / low
    high_wl = old_ctx / high
    new = np.where(wavelen > low_wl, inv_freq / factor, inv_freq)
    smooth = (old_ctx / wavelen - low) / (high - low)
    smoothed = (1.0 - smooth) * new / factor + smooth * new
    medium = ~(wavelen < high_wl) & ~(wavelen > low_wl)
    new = np.where(medium, smoothed, new)
    return (inv_freq / new).astype(np.float32)


def synthetic_vocab(n_vocab, specials):
    """tokens, scores, types for a placeholder sentencepiece-style vocabulary."""
    tokens = [f"<t{i}>" for i in range(n_vocab)]
    types = [TOK_NORMAL] * n_vocab
    scores = [-float(i) for i in range(n_vocab)]
    for name, tid in specials.items():
        if tid is not None and 0 <= tid < n_vocab:
            tokens[tid] = f"<{name}>"
            types[tid] = TOK_UNKNOWN if name == "unk" else TOK_CONTROL
            scores[tid] = 0.0
    taken = {tid for tid in specials.values() if tid is not None}
    free = [i for i in range(n_vocab) if i not in taken]
    # all 256 byte tokens when they fit; otherwise just the newline, which
    # llama.cpp looks up at load time
    byte_vals = range(256) if len(free) >= 256 + 1 else [0x0A]
    for b, tid in zip(byte_vals, free):
        tokens[tid] = f"<0x{b:02X}>"
        types[tid] = TOK_BYTE
        scores[tid] = 0.0
    return tokens, scores, types


def build(hf_dir, outtype, name):
    with open(os.path.join(hf_dir, "config.json")) as f:
        cfg = json.load(f)
    arch = cfg.get("model_type")
    if arch not in ("llama", "qwen2"):
        sys.exit(f"error: model_type {arch!r} is not supported (llama, qwen2)")
    st = SafeTensors(hf_dir)

    hidden = int(cfg["hidden_size"])
    n_layer = int(cfg["num_hidden_layers"])
    n_head = int(cfg["num_attention_heads"])
    n_kv = int(cfg.get("num_key_value_heads") or n_head)
    head_dim = int(cfg.get("head_dim") or hidden // n_head)
    n_ff = int(cfg["intermediate_size"])
    eps = float(cfg.get("rms_norm_eps", 1e-6))
    rope_params = cfg.get("rope_parameters") or {}
    theta = float(cfg.get("rope_theta", rope_params.get("rope_theta", 10000.0)))
    ctx_len = int(cfg.get("max_position_embeddings", 4096))
    n_vocab = int(st.shape("model.embed_tokens.weight")[0])
    if arch == "qwen2" and head_dim * n_head != hidden:
        sys.exit("error: llama.cpp's qwen2 needs head_dim * num_attention_heads == hidden_size")
    if arch == "qwen2" and cfg.get("use_sliding_window"):
        print("warning: use_sliding_window is set; llama.cpp's qwen2 ignores it", file=sys.stderr)

    tied = bool(cfg.get("tie_word_embeddings", False)) or "lm_head.weight" not in st
    if not cfg.get("tie_word_embeddings", False) and "lm_head.weight" not in st:
        print("warning: no lm_head.weight; writing as tied embeddings", file=sys.stderr)

    scaling = cfg.get("rope_scaling")
    if scaling is None and rope_params.get("rope_type", "default") != "default":
        scaling = rope_params
    rope_type = None if scaling is None else (scaling.get("rope_type") or scaling.get("type"))
    if rope_type in (None, "default"):
        rope_type = None
    elif rope_type not in ("linear", "llama3"):
        sys.exit(f"error: rope scaling {rope_type!r} is not supported (linear, llama3)")

    A = arch
    kvs = [
        ("general.architecture", T_STRING, arch, None),
        ("general.name", T_STRING, name or os.path.basename(os.path.abspath(hf_dir)), None),
        ("general.file_type", T_UINT32, FTYPE[outtype], None),
        (f"{A}.context_length", T_UINT32, ctx_len, None),
        (f"{A}.embedding_length", T_UINT32, hidden, None),
        (f"{A}.block_count", T_UINT32, n_layer, None),
        (f"{A}.feed_forward_length", T_UINT32, n_ff, None),
        (f"{A}.attention.head_count", T_UINT32, n_head, None),
        (f"{A}.attention.head_count_kv", T_UINT32, n_kv, None),
        (f"{A}.attention.layer_norm_rms_epsilon", T_FLOAT32, eps, None),
        (f"{A}.rope.freq_base", T_FLOAT32, theta, None),
        (f"{A}.rope.dimension_count", T_UINT32, head_dim, None),
        (f"{A}.vocab_size", T_UINT32, n_vocab, None),
    ]
    if head_dim * n_head != hidden:
        kvs += [(f"{A}.attention.key_length", T_UINT32, head_dim, None),
                (f"{A}.attention.value_length", T_UINT32, head_dim, None)]
    if rope_type == "linear":
        kvs += [(f"{A}.rope.scaling.type", T_STRING, "linear", None),
                (f"{A}.rope.scaling.factor", T_FLOAT32, float(scaling["factor"]), None)]

    bos = first_int(cfg.get("bos_token_id"))
    eos = first_int(cfg.get("eos_token_id"))
    unk = next(i for i in range(n_vocab) if i not in (bos, eos))
    tokens, scores, types = synthetic_vocab(n_vocab, {"unk": unk, "s": bos, "/s": eos})
    kvs += [
        ("tokenizer.ggml.model", T_STRING, "llama", None),
        ("tokenizer.ggml.tokens", T_ARRAY, tokens, T_STRING),
        ("tokenizer.ggml.scores", T_ARRAY, scores, T_FLOAT32),
        ("tokenizer.ggml.token_type", T_ARRAY, types, T_INT32),
        ("tokenizer.ggml.unknown_token_id", T_UINT32, unk, None),
        ("tokenizer.ggml.add_bos_token", T_BOOL, False, None),
        ("tokenizer.ggml.add_eos_token", T_BOOL, False, None),
    ]
    if bos is not None:
        kvs.append(("tokenizer.ggml.bos_token_id", T_UINT32, bos, None))
    if eos is not None:
        kvs.append(("tokenizer.ggml.eos_token_id", T_UINT32, eos, None))

    out_g = OUT_GGML[outtype]
    tensors = []
    used = set()

    def add(hf_name, gg_name, permute_heads=None):
        if hf_name not in st:
            sys.exit(f"error: missing tensor {hf_name}")
        used.add(hf_name)
        shape = st.shape(hf_name)
        gtype = GGML_F32 if len(shape) == 1 else out_g

        def produce():
            a, dt = st.raw(hf_name)
            if permute_heads is not None:
                yield convert_block(rope_permute(np.asarray(a), permute_heads), dt, gtype)
                return
            if a.ndim == 1:
                yield convert_block(np.asarray(a), dt, gtype)
                return
            step = max(1, CHUNK_ELEMS // max(1, int(np.prod(a.shape[1:]))))
            for r in range(0, a.shape[0], step):
                yield convert_block(np.asarray(a[r:r + step]), dt, gtype)
        tensors.append(Tensor(gg_name, shape, gtype, produce))

    def add_optional(hf_name, gg_name, permute_heads=None):
        if hf_name in st:
            add(hf_name, gg_name, permute_heads)

    add("model.embed_tokens.weight", "token_embd.weight")
    if rope_type == "llama3":
        factors = llama3_rope_factors(scaling, head_dim, theta)
        tensors.append(Tensor("rope_freqs.weight", factors.shape, GGML_F32,
                              lambda: iter([factors.astype("<f4").tobytes()])))
    perm_q = n_head if arch == "llama" else None
    perm_k = n_kv if arch == "llama" else None
    for i in range(n_layer):
        p = f"model.layers.{i}."
        b = f"blk.{i}."
        add(p + "input_layernorm.weight", b + "attn_norm.weight")
        add(p + "self_attn.q_proj.weight", b + "attn_q.weight", perm_q)
        add_optional(p + "self_attn.q_proj.bias", b + "attn_q.bias", perm_q)
        add(p + "self_attn.k_proj.weight", b + "attn_k.weight", perm_k)
        add_optional(p + "self_attn.k_proj.bias", b + "attn_k.bias", perm_k)
        add(p + "self_attn.v_proj.weight", b + "attn_v.weight")
        add_optional(p + "self_attn.v_proj.bias", b + "attn_v.bias")
        add(p + "self_attn.o_proj.weight", b + "attn_output.weight")
        add_optional(p + "self_attn.o_proj.bias", b + "attn_output.bias")
        add(p + "post_attention_layernorm.weight", b + "ffn_norm.weight")
        add(p + "mlp.gate_proj.weight", b + "ffn_gate.weight")
        add(p + "mlp.up_proj.weight", b + "ffn_up.weight")
        add(p + "mlp.down_proj.weight", b + "ffn_down.weight")
    add("model.norm.weight", "output_norm.weight")
    if not tied:
        add("lm_head.weight", "output.weight")
    elif "lm_head.weight" in st:
        used.add("lm_head.weight")

    skipped = sorted(n for n in st.entries if n not in used and not n.endswith("rotary_emb.inv_freq"))
    if skipped:
        print(f"warning: {len(skipped)} tensors not converted, e.g. {skipped[:4]}", file=sys.stderr)
    return kvs, tensors


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("hf_dir")
    ap.add_argument("out")
    ap.add_argument("--outtype", choices=("f16", "bf16", "f32"), default="f16")
    ap.add_argument("--name", default=None, help="general.name (default: folder name)")
    args = ap.parse_args()
    kvs, tensors = build(args.hf_dir, args.outtype, args.name)
    write_gguf(args.out, kvs, tensors)
    print(f"wrote {args.out}: {len(tensors)} tensors, {len(kvs)} metadata keys, "
          f"{os.path.getsize(args.out) / 2**20:.1f} MiB", file=sys.stderr)


if __name__ == "__main__":
    main()
