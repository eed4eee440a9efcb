#!/usr/bin/env python3
"""hf_to_gguf.py - convert a Hugging Face llama / qwen2 checkpoint folder to GGUF v3.

Purpose: run llama.cpp (the peer engine, see docs/peer-llama-cpp.md) on the very
same weights that mstar loads, so the two can be measured side by side, and
give mstar's GGUF reader (docs/gguf.md) files made by an implementation of its
own, written from the GGUF and ggml definitions, to be tested against.
Needs only the Python standard library and numpy; the block encodings are
tools/gguf_blocks.py, and tools/gguf_dump.py reads the result back.

Usage:
    python3 tools/hf_to_gguf.py HF_DIR OUT.gguf [--outtype TYPE] [--name NAME]
        [--tokenizer synthetic|hf] [--tokenizer-dir DIR]

HF_DIR holds config.json and either model.safetensors or the shards listed in
model.safetensors.index.json.  Source tensors may be F32, F16 or BF16.
config.json's model_type must be "llama" or "qwen2".

--outtype (default f16) sets the type of the 2-D tensors and general.file_type
(llama_ftype):

    f32 (0)   f16 (1)   bf16 (32)   q8_0 (7)   q4_0 (2)
    q4_k (14) q5_k (16) q6_k (18)   every 2-D tensor of that type; 14 and 16
                                    are llama_ftype's Q4_K_S / Q5_K_S numbers
    q4_k_m (15)  llama.cpp's Q4_K_M mix: Q6_K for output.weight (for
              token_embd.weight instead when the embeddings are tied, since
              llama.cpp then uses it as the output), Q6_K for attn_v and
              ffn_down on the layers of llama.cpp's use_more_bits rule (i <
              n/8, i >= 7n/8, or (i - n/8) % 3 == 2, integer division),
              Q4_K for every other 2-D tensor.

A 2-D tensor whose rows (ne[0], the input dimension) are not whole blocks of
its type (32 for q8_0/q4_0, 256 for the K types) is written as f16 instead,
with a warning on stderr, as llama.cpp's converter does.  1-D tensors (norms,
biases, rope_freqs) are always f32.  Quantised files also carry
general.quantization_version = 2.  Quantisation follows ggml's reference
quantisers (see tools/gguf_blocks.py; llama-quantize without an importance
matrix runs the same ones).  The plain q4_k/q5_k types are not llama.cpp's
_S mixes (which move a few tensors to other types); the file_type number is
only a label, llama.cpp reads each tensor's own type.

--tokenizer picks the vocabulary written; the default is hf when the tokenizer
folder (HF_DIR, or --tokenizer-dir DIR) has a tokenizer.json that is a
byte-level BPE, else synthetic (with a warning when a tokenizer.json of
another kind was passed over).  --tokenizer-dir implies hf.
  * hf: a gpt2-style vocabulary, as llama.cpp's converter writes one for BPE
    models: tokenizer.ggml.model = "gpt2", tokenizer.ggml.pre = "llama-bpe"
    (llama, i.e. llama3-style) or "qwen2"; tokenizer.ggml.tokens with one
    entry per id 0..vocab_size-1 from model.vocab and added_tokens (ids with
    no token become "[PAD<id>]"); token_type 1 normal, 3 control (added,
    special), 4 user-defined (added, not special), 5 unused (padding);
    tokenizer.ggml.merges as "a b" strings (pairs are joined; a space inside
    a part is written as U+0120, its byte-level form); bos/eos ids from
    config.json, else tokenizer_config.json's bos_token / eos_token looked up
    in the vocabulary (a disagreement is warned about; config.json wins);
    add_bos_token / add_eos_token from tokenizer_config.json when it has
    them, else true when tokenizer.json's post_processor (a
    TemplateProcessing, possibly inside a Sequence) puts the bos token
    before / the eos token after the sequence (llama3 adds BOS that way);
    tokenizer.chat_template when tokenizer_config.json has one.  The vocab
    size is the model's (embed_tokens' rows): a tokenizer with an id beyond it
    is refused.  Other tokenizers (WordPiece, sentencepiece-style BPE with
    byte_fallback) are refused with --tokenizer hf.
  * synthetic: placeholder tokens (the checkpoint's real tokenizer is not
    converted): tokenizer.ggml.model = "llama" (sentencepiece-style), one token
    per id named "<tN>", byte tokens "<0x00>".."<0xFF>" on the first 256 ids
    that are not special (only "<0x0A>" in a vocabulary too small for all
    256; llama.cpp looks the newline token up at load time), bos/eos ids from
    config.json marked as control tokens, add_bos/add_eos false.  Good for
    benchmarking and for feeding token ids; text prompts are meaningless.

What else is written (GGUF v3, little-endian, alignment 32):
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
  * tensors, in llama.cpp's names: token_embd, blk.N.attn_norm, attn_q/k/v
    (+ .bias when the checkpoint has them: qwen2, or llama with
    attention_bias), attn_output, ffn_norm, ffn_gate/up/down, output_norm,
    and output.weight unless the embeddings are tied (then llama.cpp reuses
    token_embd).  bf16 is rounded to nearest even from f32/f16 sources and
    copied bit-exactly from bf16 sources; f16 likewise from f16 sources.
    Each tensor's data starts at a multiple of 32 bytes from the start of the
    data section (itself 32-aligned), padded with zeros.

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
from its memory-mapped shard, converted in chunks of whole rows (quantisation
blocks never straddle rows) and written, so peak memory stays near one tensor
(a q/k projection is permuted whole, before it is quantised).
"""

import argparse
import json
import math
import os
import struct
import sys

sys.dont_write_bytecode = True  # keep the source tree free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_blocks as gb  # noqa: E402  (first: it finds a python3 with numpy)
import numpy as np  # noqa: E402

GGUF_MAGIC = b"GGUF"
GGUF_VERSION = 3
ALIGNMENT = 32

# GGUF metadata value types
T_UINT8, T_INT8, T_UINT16, T_INT16, T_UINT32, T_INT32, T_FLOAT32, T_BOOL, \
    T_STRING, T_ARRAY, T_UINT64, T_INT64, T_FLOAT64 = range(13)

# ggml tensor types
GGML_F32, GGML_F16, GGML_BF16 = gb.F32, gb.F16, gb.BF16
# --outtype -> (ggml type of the 2-D tensors, llama_ftype written as general.file_type)
OUTTYPES = {
    "f32": (gb.F32, 0),
    "f16": (gb.F16, 1),
    "bf16": (gb.BF16, 32),
    "q8_0": (gb.Q8_0, 7),
    "q4_0": (gb.Q4_0, 2),
    "q4_k": (gb.Q4_K, 14),     # LLAMA_FTYPE_MOSTLY_Q4_K_S
    "q5_k": (gb.Q5_K, 16),     # LLAMA_FTYPE_MOSTLY_Q5_K_S
    "q6_k": (gb.Q6_K, 18),
    "q4_k_m": (gb.Q4_K, 15),   # the mix: see choose_type
}
QUANTISED = {gb.Q8_0, gb.Q4_0, gb.Q4_K, gb.Q5_K, gb.Q6_K}
GGML_QNT_VERSION = 2

# token types (llama_token_type)
TOK_NORMAL, TOK_UNKNOWN, TOK_CONTROL, TOK_USER_DEFINED, TOK_UNUSED, TOK_BYTE = 1, 2, 3, 4, 5, 6

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


def convert_block(a, dt, gtype):
    """Convert a block of source values (whole rows) to the bytes of ggml type gtype."""
    if gtype == GGML_BF16 and dt == "BF16":
        return np.ascontiguousarray(a).tobytes()
    if gtype == GGML_F16 and dt == "F16":
        return np.ascontiguousarray(a).tobytes()
    return gb.quantize(to_f32(np.asarray(a), dt), gtype).tobytes()


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
        self.nbytes = gb.nbytes(gtype, int(np.prod(self.np_shape)))


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
                  f"{gb.type_name(t.gtype).lower()}", file=sys.stderr)


# ----------------------------------------------------------------- helpers
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


def use_more_bits(i_layer, n_layer):
    """llama.cpp's rule for the layers whose attn_v / ffn_down get more bits in the
    _M mixes: the first eighth, the last eighth, and every third layer between."""
    return (i_layer < n_layer // 8 or i_layer >= 7 * n_layer // 8
            or (i_layer - n_layer // 8) % 3 == 2)


def choose_type(outtype, gg_name, np_shape, layer, n_layer, tied):
    """ggml type of one tensor, and a note when it had to fall back to f16."""
    if len(np_shape) == 1:
        return GGML_F32, None
    base = OUTTYPES[outtype][0]
    gtype = base
    if outtype == "q4_k_m":
        if gg_name == "output.weight" or (tied and gg_name == "token_embd.weight"):
            gtype = gb.Q6_K   # llama.cpp treats the tied embedding as the output tensor
        elif layer is not None and gg_name.endswith((".attn_v.weight", ".ffn_down.weight")) \
                and use_more_bits(layer, n_layer):
            gtype = gb.Q6_K
    ne0 = np_shape[-1]
    bs = gb.block_size(gtype)
    if ne0 % bs:
        return GGML_F16, (f"{gg_name}: row length {ne0} is not a multiple of {bs}, "
                          f"the {gb.type_name(gtype)} block; falling back to f16")
    return gtype, None


# ----------------------------------------------------------------- tokenizers
def synthetic_kvs(cfg, n_vocab):
    bos = first_int(cfg.get("bos_token_id"))
    eos = first_int(cfg.get("eos_token_id"))
    unk = next(i for i in range(n_vocab) if i not in (bos, eos))
    tokens, scores, types = synthetic_vocab(n_vocab, {"unk": unk, "s": bos, "/s": eos})
    kvs = [
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
    return kvs


def _token_text(v):
    """tokenizer_config.json spells a special token as a string or {"content": ...}."""
    if isinstance(v, dict):
        v = v.get("content")
    return v if isinstance(v, str) else None


def _templates(pp):
    """Every TemplateProcessing inside a post_processor (possibly a Sequence)."""
    if not isinstance(pp, dict):
        return []
    if pp.get("type") == "TemplateProcessing":
        return [pp]
    if pp.get("type") == "Sequence":
        return [t for sub in pp.get("processors", []) for t in _templates(sub)]
    return []


def _template_adds(pp, tok_id, ids_of):
    """(before, after): whether the single-sequence template puts token tok_id
    before / after the sequence."""
    before = after = False
    if tok_id is None:
        return before, after
    for t in _templates(pp):
        seen_seq = False
        specials = t.get("special_tokens") or {}
        for item in t.get("single") or []:
            if "Sequence" in item:
                seen_seq = True
                continue
            sp = item.get("SpecialToken")
            if not sp:
                continue
            name = sp.get("id")
            ids = (specials.get(name) or {}).get("ids") or []
            if tok_id in ids or ids_of.get(name) == tok_id:
                if seen_seq:
                    after = True
                else:
                    before = True
    return before, after


class NotByteLevelBPE(Exception):
    pass


def hf_tokenizer_kvs(tok_dir, cfg, arch, n_vocab):
    """gpt2-style (byte-level BPE) vocabulary from tokenizer.json, as llama.cpp's
    converter writes it for BPE models.  Raises NotByteLevelBPE for any other
    kind of tokenizer."""
    path = os.path.join(tok_dir, "tokenizer.json")
    if not os.path.exists(path):
        sys.exit(f"error: --tokenizer hf: no tokenizer.json in {tok_dir}")
    tc_path = os.path.join(tok_dir, "tokenizer_config.json")
    try:
        with open(path, encoding="utf-8") as f:
            tj = json.load(f)
        tc = {}
        if os.path.exists(tc_path):
            with open(tc_path, encoding="utf-8") as f:
                tc = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"error: reading the tokenizer in {tok_dir}: {e}")
    if not isinstance(tj, dict) or not isinstance(tc, dict):
        sys.exit(f"error: {tok_dir}: tokenizer.json and tokenizer_config.json must hold JSON objects")
    model = tj.get("model") or {}
    if model.get("type") != "BPE" or model.get("byte_fallback"):
        raise NotByteLevelBPE(f"{path}: model.type {model.get('type')!r}"
                              f"{' with byte_fallback' if model.get('byte_fallback') else ''} is not "
                              "a byte-level BPE (gpt2-style) tokenizer")
    if "ByteLevel" not in json.dumps(tj.get("pre_tokenizer")) + json.dumps(tj.get("decoder")):
        raise NotByteLevelBPE(f"{path}: no ByteLevel pre-tokenizer or decoder, so not a byte-level "
                              "BPE (gpt2-style) tokenizer")

    by_id = {}
    for tok, tid in model.get("vocab", {}).items():
        by_id[int(tid)] = tok
    added = {}
    for a in tj.get("added_tokens") or []:
        tid = int(a["id"])
        if tid in by_id and by_id[tid] != a["content"]:
            print(f"warning: id {tid} is {by_id[tid]!r} in model.vocab and {a['content']!r} in "
                  "added_tokens; using the added token", file=sys.stderr)
        by_id[tid] = a["content"]
        added[tid] = bool(a.get("special"))
    if not by_id:
        sys.exit(f"error: {path}: empty vocabulary")
    top = max(by_id)
    if top >= n_vocab or min(by_id) < 0:
        sys.exit(f"error: the tokenizer in {tok_dir} has {len(by_id)} tokens with ids up to {top}, "
                 f"more than the model's vocab_size {n_vocab} (ids 0..{n_vocab - 1})")
    tokens, types = [], []
    for i in range(n_vocab):
        if i not in by_id:
            tokens.append(f"[PAD{i}]")
            types.append(TOK_UNUSED)
        elif i in added:
            tokens.append(by_id[i])
            types.append(TOK_CONTROL if added[i] else TOK_USER_DEFINED)
        else:
            tokens.append(by_id[i])
            types.append(TOK_NORMAL)
    n_pad = n_vocab - len(by_id)
    if n_pad:
        print(f"tokenizer: {n_pad} ids without a token written as [PAD<id>] (unused)", file=sys.stderr)

    merges = []
    for m in model.get("merges") or []:
        if isinstance(m, str):
            merges.append(m)
        else:
            # a pair; a literal space inside a part is written as its byte-level
            # form (U+0120) so that "a b" splits unambiguously at the space
            a, b = m
            merges.append(a.replace(" ", "\u0120") + " " + b.replace(" ", "\u0120"))

    ids_of = {t: i for i, t in enumerate(tokens) if types[i] != TOK_UNUSED}

    def special_id(key):
        """config.json's id, else tokenizer_config.json's token looked up in the vocabulary."""
        from_cfg = first_int(cfg.get(f"{key}_token_id"))
        text = _token_text(tc.get(f"{key}_token"))
        from_tc = ids_of.get(text) if text is not None else None
        if text is not None and from_tc is None:
            print(f"warning: tokenizer_config.json's {key}_token {text!r} is not in the vocabulary",
                  file=sys.stderr)
        if from_cfg is not None and from_tc is not None and from_cfg != from_tc:
            print(f"warning: {key} token: config.json says id {from_cfg}, tokenizer_config.json says "
                  f"{text!r} = id {from_tc}; writing config.json's", file=sys.stderr)
        tid = from_cfg if from_cfg is not None else from_tc
        if tid is not None and not 0 <= tid < n_vocab:
            print(f"warning: {key}_token_id {tid} is outside the vocabulary; not written", file=sys.stderr)
            tid = None
        return tid

    bos = special_id("bos")
    eos = special_id("eos")
    pp = tj.get("post_processor")
    bos_before, _ = _template_adds(pp, bos, ids_of)
    _, eos_after = _template_adds(pp, eos, ids_of)
    add_bos = tc["add_bos_token"] if isinstance(tc.get("add_bos_token"), bool) else bos_before
    add_eos = tc["add_eos_token"] if isinstance(tc.get("add_eos_token"), bool) else eos_after

    kvs = [
        ("tokenizer.ggml.model", T_STRING, "gpt2", None),
        ("tokenizer.ggml.pre", T_STRING, "llama-bpe" if arch == "llama" else "qwen2", None),
        ("tokenizer.ggml.tokens", T_ARRAY, tokens, T_STRING),
        ("tokenizer.ggml.token_type", T_ARRAY, types, T_INT32),
        ("tokenizer.ggml.merges", T_ARRAY, merges, T_STRING),
    ]
    if bos is not None:
        kvs.append(("tokenizer.ggml.bos_token_id", T_UINT32, bos, None))
    if eos is not None:
        kvs.append(("tokenizer.ggml.eos_token_id", T_UINT32, eos, None))
    kvs.append(("tokenizer.ggml.add_bos_token", T_BOOL, bool(add_bos), None))
    kvs.append(("tokenizer.ggml.add_eos_token", T_BOOL, bool(add_eos), None))
    if isinstance(tc.get("chat_template"), str):
        kvs.append(("tokenizer.chat_template", T_STRING, tc["chat_template"], None))
    print(f"tokenizer: gpt2 from {path}: {len(by_id)} tokens, {len(merges)} merges, "
          f"bos {bos} eos {eos} add_bos {bool(add_bos)}", file=sys.stderr)
    return kvs


# ----------------------------------------------------------------- model mapping
def build(hf_dir, outtype, name, tokenizer=None, tokenizer_dir=None):
    with open(os.path.join(hf_dir, "config.json")) as f:
        cfg = json.load(f)
    arch = cfg.get("model_type")
    if arch not in ("llama", "qwen2"):
        sys.exit(f"error: model_type {arch!r} is not supported (llama, qwen2)")
    tok_dir = tokenizer_dir or hf_dir
    auto = tokenizer is None
    if auto:
        tokenizer = "hf" if os.path.exists(os.path.join(tok_dir, "tokenizer.json")) else "synthetic"
    if tokenizer == "synthetic" and tokenizer_dir is not None:
        sys.exit("error: --tokenizer-dir goes with --tokenizer hf")
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
    if cfg.get("vocab_size") is not None and int(cfg["vocab_size"]) != n_vocab:
        print(f"warning: config.json's vocab_size {cfg['vocab_size']} differs from the "
              f"{n_vocab} rows of embed_tokens; writing {n_vocab}", file=sys.stderr)
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
        ("general.file_type", T_UINT32, OUTTYPES[outtype][1], None),
    ]
    if OUTTYPES[outtype][0] in QUANTISED:
        kvs.append(("general.quantization_version", T_UINT32, GGML_QNT_VERSION, None))
    kvs += [
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

    tok_kvs = None
    if tokenizer == "hf":
        try:
            tok_kvs = hf_tokenizer_kvs(tok_dir, cfg, arch, n_vocab)
        except NotByteLevelBPE as e:
            if not auto:
                sys.exit(f"error: {e}; only those are converted (or use --tokenizer synthetic)")
            print(f"warning: {e}; writing the synthetic tokenizer", file=sys.stderr)
    kvs += tok_kvs if tok_kvs is not None else synthetic_kvs(cfg, n_vocab)

    tensors = []
    used = set()
    fallbacks = []

    def add(hf_name, gg_name, permute_heads=None, layer=None):
        if hf_name not in st:
            sys.exit(f"error: missing tensor {hf_name}")
        used.add(hf_name)
        shape = st.shape(hf_name)
        gtype, note = choose_type(outtype, gg_name, shape, layer, n_layer, tied)
        if note:
            print(f"warning: {note}", file=sys.stderr)
            fallbacks.append(gg_name)

        def produce():
            a, dt = st.raw(hf_name)
            if a.ndim == 1:
                if permute_heads is not None:
                    a = rope_permute(np.asarray(a), permute_heads)
                yield convert_block(np.asarray(a), dt, gtype)
                return
            if permute_heads is not None:
                a = rope_permute(np.asarray(a), permute_heads)
            # whole rows per step: quantisation blocks never straddle rows
            step = max(1, CHUNK_ELEMS // max(1, int(np.prod(a.shape[1:]))))
            for r in range(0, a.shape[0], step):
                yield convert_block(np.asarray(a[r:r + step]), dt, gtype)
        tensors.append(Tensor(gg_name, shape, gtype, produce))

    def add_optional(hf_name, gg_name, permute_heads=None, layer=None):
        if hf_name in st:
            add(hf_name, gg_name, permute_heads, layer)

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
        add(p + "self_attn.q_proj.weight", b + "attn_q.weight", perm_q, i)
        add_optional(p + "self_attn.q_proj.bias", b + "attn_q.bias", perm_q, i)
        add(p + "self_attn.k_proj.weight", b + "attn_k.weight", perm_k, i)
        add_optional(p + "self_attn.k_proj.bias", b + "attn_k.bias", perm_k, i)
        add(p + "self_attn.v_proj.weight", b + "attn_v.weight", None, i)
        add_optional(p + "self_attn.v_proj.bias", b + "attn_v.bias", None, i)
        add(p + "self_attn.o_proj.weight", b + "attn_output.weight", None, i)
        add_optional(p + "self_attn.o_proj.bias", b + "attn_output.bias", None, i)
        add(p + "post_attention_layernorm.weight", b + "ffn_norm.weight")
        add(p + "mlp.gate_proj.weight", b + "ffn_gate.weight", None, i)
        add(p + "mlp.up_proj.weight", b + "ffn_up.weight", None, i)
        add(p + "mlp.down_proj.weight", b + "ffn_down.weight", None, i)
    add("model.norm.weight", "output_norm.weight")
    if not tied:
        add("lm_head.weight", "output.weight")
    elif "lm_head.weight" in st:
        used.add("lm_head.weight")

    skipped = sorted(n for n in st.entries if n not in used and not n.endswith("rotary_emb.inv_freq"))
    if skipped:
        print(f"warning: {len(skipped)} tensors not converted, e.g. {skipped[:4]}", file=sys.stderr)
    if fallbacks:
        print(f"warning: {len(fallbacks)} 2-D tensors written as f16 instead of {outtype}",
              file=sys.stderr)
    return kvs, tensors


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("hf_dir")
    ap.add_argument("out")
    ap.add_argument("--outtype", choices=tuple(OUTTYPES), default="f16")
    ap.add_argument("--name", default=None, help="general.name (default: folder name)")
    ap.add_argument("--tokenizer", choices=("synthetic", "hf"), default=None,
                    help="hf: the checkpoint's tokenizer.json as a gpt2 vocabulary; synthetic: "
                         "placeholder tokens (default: hf when tokenizer.json is there)")
    ap.add_argument("--tokenizer-dir", default=None,
                    help="take tokenizer.json / tokenizer_config.json from DIR (implies --tokenizer hf)")
    args = ap.parse_args()
    if args.tokenizer_dir is not None and args.tokenizer is None:
        args.tokenizer = "hf"
    kvs, tensors = build(args.hf_dir, args.outtype, args.name, args.tokenizer, args.tokenizer_dir)
    write_gguf(args.out, kvs, tensors)
    print(f"wrote {args.out}: {len(tensors)} tensors, {len(kvs)} metadata keys, "
          f"{os.path.getsize(args.out) / 2**20:.1f} MiB", file=sys.stderr)


if __name__ == "__main__":
    main()
