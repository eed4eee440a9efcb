#!/usr/bin/python3
"""A float64 numpy forward of Hugging Face `llama` and `qwen2` decoders,
written from the public definitions (transformers' modeling_llama.py,
modeling_qwen2.py and the rope init functions of modeling_rope_utils.py),
sharing no code with mstar. It exists to compute goldens for mstar's C++
(tools/make_hf_goldens.py); docs/hf-decoders.md states the model it computes.

Two ways to run it:

- `Model.forward_full(ids)`: plain causal attention over the whole sequence,
  positions 0..L-1 (what transformers computes).
- `Stream`: mstar's bounded sink + window KV protocol, step by step, with the
  rotary positions of either the stream ("stream") or the retained cache
  ("cache", StreamingLLM).

Both go through `attend`, which takes each query's list of visible keys and
every key's and query's rotary position explicitly.

Everything is float64: stored F32/F16/BF16 weights are widened exactly, and
the rotary frequencies are computed in float64 (transformers computes them in
float32; the two differ by about 1e-7 relative).

CLI, for poking at a folder:
  tools/hf/reference.py DIR --ids 5,6,7 --generate 8
  tools/hf/reference.py DIR --voice 1,2,3 --ids 5,6,7 --generate 40 --sink 4 --window 12 --mode cache
"""
import argparse
import json
import math
import os
import sys
from typing import Dict, List, Sequence

import numpy as np

ST_DTYPES = {"F32": ("<f4", 4), "F16": ("<f2", 2), "BF16": ("<u2", 2)}


def read_safetensors(path: str) -> Dict[str, np.ndarray]:
    """Reads every tensor of a safetensors file as float64, checking the
    header's offsets against the file (contiguous, in bounds, sized by
    dtype and shape)."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise ValueError(f"{path}: shorter than the 8-byte header length")
    n = int.from_bytes(data[:8], "little")
    if 8 + n > len(data):
        raise ValueError(f"{path}: header length {n} runs past the end of the file")
    header = json.loads(data[8:8 + n])
    body = memoryview(data)[8 + n:]
    header.pop("__metadata__", None)
    out = {}
    end = 0
    for name, t in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        np_dtype, size = ST_DTYPES[t["dtype"]]
        a, b = t["data_offsets"]
        count = int(np.prod(t["shape"], dtype=np.int64))
        if a != end or b - a != count * size or b > len(body):
            raise ValueError(f"{path}: tensor {name} has bad data_offsets {a, b}")
        end = b
        raw = np.frombuffer(body[a:b], dtype=np_dtype)
        if t["dtype"] == "BF16":
            # bf16 is the top half of a float32: widening is a 16-bit shift.
            x = (raw.astype(np.uint32) << np.uint32(16)).view(np.float32)
        else:
            x = raw
        out[name] = x.astype(np.float64).reshape(t["shape"])
    if end != len(body):
        raise ValueError(f"{path}: {len(body) - end} bytes after the last tensor")
    return out


def load_folder(folder: str):
    """(config dict, {tensor name: float64 array}) of a Hugging Face folder."""
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    index = os.path.join(folder, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    weights = {}
    for fn in files:
        for k, v in read_safetensors(os.path.join(folder, fn)).items():
            if k in weights:
                raise ValueError(f"{folder}: tensor {k} appears in two files")
            weights[k] = v
    return cfg, weights


def head_dim_of(cfg: dict) -> int:
    # transformers: getattr(config, "head_dim", None) or hidden // heads.
    return cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]


def rope_type_of(cfg: dict) -> str:
    rs = cfg.get("rope_scaling")
    if rs is None:
        return "default"
    # Older configs spell the key "type"; transformers accepts both.
    return rs.get("rope_type", rs.get("type", "default"))


def rope_inv_freq(cfg: dict) -> np.ndarray:
    """inv_freq[i], i < D/2, as transformers' rope init functions define it
    (default, linear, llama3), in float64."""
    D = head_dim_of(cfg)
    theta = float(cfg.get("rope_theta", 10000.0))
    inv = 1.0 / theta ** (np.arange(0, D, 2, dtype=np.float64) / D)
    kind = rope_type_of(cfg)
    rs = cfg.get("rope_scaling")
    if kind == "default":
        return inv
    if kind == "linear":
        # Dividing the frequencies equals dividing the positions by factor.
        return inv / float(rs["factor"])
    if kind == "llama3":
        factor = float(rs["factor"])
        low = float(rs["low_freq_factor"])
        high = float(rs["high_freq_factor"])
        old = float(rs["original_max_position_embeddings"])
        low_wavelen = old / low
        high_wavelen = old / high
        wavelen = 2 * math.pi / inv
        # Long wavelengths (low frequencies) are divided by factor, short
        # ones kept, and the band between is interpolated linearly in
        # old/wavelen.
        scaled = np.where(wavelen > low_wavelen, inv / factor, inv)
        smooth = (old / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelen < high_wavelen) & ~(wavelen > low_wavelen)
        return np.where(medium, smoothed, scaled)
    raise ValueError(f"rope scaling {kind!r} is not one this reference computes")


def rope(x: np.ndarray, pos: np.ndarray, inv_freq: np.ndarray) -> np.ndarray:
    """Rotates x [n, heads, D] by positions pos [n] in the rotate_half
    convention: element i pairs with element i + D/2 and both turn by
    angle pos * inv_freq[i]."""
    ang = np.asarray(pos, dtype=np.float64)[:, None] * inv_freq[None, :]  # [n, D/2]
    cos = np.cos(ang)[:, None, :]
    sin = np.sin(ang)[:, None, :]
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h], x[..., h:]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


def attend(q: np.ndarray, q_pos, k: np.ndarray, k_pos, v: np.ndarray,
           visible: Sequence[np.ndarray], inv_freq: np.ndarray) -> np.ndarray:
    """Grouped-query attention with explicit visibility.

    q [nq, Hq, D] and k [nk, Hkv, D] are unrotated; q_pos [nq] and k_pos [nk]
    are the rotary positions to rotate them by; v [nk, Hkv, D];
    visible[j] lists the key indices query j attends to. Query head h reads
    KV head h // (Hq / Hkv). Scores are scaled by 1/sqrt(D)."""
    nq, Hq, D = q.shape
    Hkv = k.shape[1]
    assert Hq % Hkv == 0
    kv_head = np.arange(Hq) // (Hq // Hkv)
    qr = rope(q, q_pos, inv_freq)
    kr = rope(k, k_pos, inv_freq)[:, kv_head, :]  # [nk, Hq, D]
    ve = v[:, kv_head, :]
    out = np.zeros_like(qr)
    scale = 1.0 / math.sqrt(D)
    for j in range(nq):
        idx = np.asarray(visible[j], dtype=np.int64)
        if idx.size == 0:
            continue
        s = np.einsum("hd,nhd->hn", qr[j], kr[idx]) * scale
        s -= s.max(axis=1, keepdims=True)
        p = np.exp(s)
        p /= p.sum(axis=1, keepdims=True)
        out[j] = np.einsum("hn,nhd->hd", p, ve[idx])
    return out


def silu(x):
    return x / (1.0 + np.exp(-x))


def to_bf16(x: np.ndarray) -> np.ndarray:
    """x as float32, rounded to the nearest bfloat16 (ties to the even
    pattern), as float64: what an engine that multiplies in bf16 feeds its
    products."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return r.astype(np.uint32).view(np.float32).astype(np.float64)


class Model:
    """Weights and the per-layer pieces of a llama / qwen2 decoder.
    activations="bf16": every matrix product's input (the normalised hidden
    state, the attention output, silu(gate) * up) is rounded to bfloat16
    first, the weights and everything else as in "f32"."""

    def __init__(self, cfg: dict, weights: Dict[str, np.ndarray], activations: str = "f32"):
        if activations not in ("f32", "bf16"):
            raise ValueError(f"activations {activations!r} is not f32 or bf16")
        self.activations = activations
        mt = cfg.get("model_type")
        if mt not in ("llama", "qwen2"):
            raise ValueError(f"model_type {mt!r} is not llama or qwen2")
        if cfg.get("hidden_act", "silu") != "silu":
            raise ValueError("hidden_act must be silu")
        if mt == "llama" and (cfg.get("attention_bias") or cfg.get("mlp_bias")):
            raise ValueError("llama attention_bias / mlp_bias are not computed here")
        self.cfg = cfg
        self.L = cfg["num_hidden_layers"]
        self.H = cfg["hidden_size"]
        self.Hq = cfg["num_attention_heads"]
        self.Hkv = cfg["num_key_value_heads"]
        self.D = head_dim_of(cfg)
        self.eps = float(cfg["rms_norm_eps"])
        self.inv_freq = rope_inv_freq(cfg)
        self.qkv_bias = mt == "qwen2"
        self.w = dict(weights)
        expect = self._expected_shapes()
        missing = sorted(set(expect) - set(self.w))
        # A tied checkpoint may still carry lm_head.weight; transformers
        # replaces it by the embedding, and so does this.
        extra = sorted(set(self.w) - set(expect) - {"lm_head.weight"})
        if missing or extra:
            raise ValueError(f"tensors missing {missing}, unexpected {extra}")
        for name, shape in expect.items():
            if tuple(self.w[name].shape) != shape:
                raise ValueError(f"{name}: shape {self.w[name].shape}, expected {shape}")
        self.lm_head = self.w["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings") \
            else self.w["lm_head.weight"]

    def _expected_shapes(self) -> Dict[str, tuple]:
        c, H, D = self.cfg, self.H, self.D
        I = c["intermediate_size"]
        e = {"model.embed_tokens.weight": (c["vocab_size"], H), "model.norm.weight": (H,)}
        for i in range(self.L):
            p = f"model.layers.{i}."
            for proj, out in (("q", self.Hq * D), ("k", self.Hkv * D), ("v", self.Hkv * D)):
                e[f"{p}self_attn.{proj}_proj.weight"] = (out, H)
                if self.qkv_bias:
                    e[f"{p}self_attn.{proj}_proj.bias"] = (out,)
            e[f"{p}self_attn.o_proj.weight"] = (H, self.Hq * D)
            e[f"{p}mlp.gate_proj.weight"] = (I, H)
            e[f"{p}mlp.up_proj.weight"] = (I, H)
            e[f"{p}mlp.down_proj.weight"] = (H, I)
            e[f"{p}input_layernorm.weight"] = (H,)
            e[f"{p}post_attention_layernorm.weight"] = (H,)
        if not c.get("tie_word_embeddings"):
            e["lm_head.weight"] = (c["vocab_size"], H)
        return e

    def product(self, x: np.ndarray, w: np.ndarray) -> np.ndarray:
        """x [n, in] . w[out, in]^T, x rounded first for bf16 activations."""
        return (to_bf16(x) if self.activations == "bf16" else x) @ w.T

    def rms_norm(self, x: np.ndarray, w: np.ndarray) -> np.ndarray:
        return w * (x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.eps))

    def embed(self, ids: Sequence[int]) -> np.ndarray:
        return self.w["model.embed_tokens.weight"][np.asarray(ids, dtype=np.int64)]

    def qkv(self, layer: int, x: np.ndarray):
        """Unrotated q [n, Hq, D], k and v [n, Hkv, D] of the layer's
        normalised input."""
        p = f"model.layers.{layer}."
        h = self.rms_norm(x, self.w[p + "input_layernorm.weight"])
        outs = []
        for proj, heads in (("q", self.Hq), ("k", self.Hkv), ("v", self.Hkv)):
            y = self.product(h, self.w[f"{p}self_attn.{proj}_proj.weight"])
            if self.qkv_bias:
                y = y + self.w[f"{p}self_attn.{proj}_proj.bias"]
            outs.append(y.reshape(len(x), heads, self.D))
        return outs

    def finish_layer(self, layer: int, x: np.ndarray, attn: np.ndarray) -> np.ndarray:
        """Residual after attention (o_proj) and after the MLP."""
        p = f"model.layers.{layer}."
        x = x + self.product(attn.reshape(len(x), self.Hq * self.D), self.w[p + "self_attn.o_proj.weight"])
        h = self.rms_norm(x, self.w[p + "post_attention_layernorm.weight"])
        g = self.product(h, self.w[p + "mlp.gate_proj.weight"])
        u = self.product(h, self.w[p + "mlp.up_proj.weight"])
        return x + self.product(silu(g) * u, self.w[p + "mlp.down_proj.weight"])

    def logits(self, x: np.ndarray) -> np.ndarray:
        return self.product(self.rms_norm(x, self.w["model.norm.weight"]), self.lm_head)

    def forward_full(self, ids: Sequence[int]) -> np.ndarray:
        """Logits [L, vocab] of plain causal attention, positions 0..L-1."""
        n = len(ids)
        pos = np.arange(n)
        visible = [np.arange(j + 1) for j in range(n)]
        x = self.embed(ids)
        for l in range(self.L):
            q, k, v = self.qkv(l, x)
            x = self.finish_layer(l, x, attend(q, pos, k, pos, v, visible, self.inv_freq))
        return self.logits(x)


def retained(n: int, sink: int, window: int) -> np.ndarray:
    """Stream positions a step starting at n entries reads (window excludes
    the step): [0, min(sink, n)) and [max(sink, n - window), n)."""
    head = np.arange(min(sink, n))
    tail = np.arange(max(sink, n - window), n)
    return np.concatenate([head, tail]).astype(np.int64)


class Stream:
    """One request's stream under sink + window retention.

    Keeps every entry's unrotated k and v (what is retained is chosen per
    step from the definition, so nothing is evicted by bookkeeping; an entry
    once outside the window is never inside it again because the window's
    lower end only grows). mode "stream": keys and queries are rotated by
    stream position (equal to rotating a key once when written). mode
    "cache": the step's visible sequence (retained entries in stream order,
    then the step's own) is rotated by ordinals 0, 1, ...; each query by its
    ordinal in that sequence."""

    def __init__(self, model: Model, sink: int, window: int, mode: str):
        assert mode in ("stream", "cache")
        self.m, self.sink, self.window, self.mode = model, sink, window, mode
        self.k = [np.zeros((0, model.Hkv, model.D)) for _ in range(model.L)]
        self.v = [np.zeros((0, model.Hkv, model.D)) for _ in range(model.L)]
        self.n = 0

    def step(self, ids: Sequence[int]) -> np.ndarray:
        """Writes `ids` as one step (causal among themselves) and returns
        their logits [span, vocab]."""
        m, n, span = self.m, self.n, len(ids)
        R = retained(n, self.sink, self.window)
        r = len(R)
        visible = [np.arange(r + j + 1) for j in range(span)]
        if self.mode == "stream":
            k_pos = np.concatenate([R, n + np.arange(span)])
            q_pos = n + np.arange(span)
        else:
            k_pos = np.arange(r + span)
            q_pos = r + np.arange(span)
        x = m.embed(ids)
        for l in range(m.L):
            q, k, v = m.qkv(l, x)
            keys = np.concatenate([self.k[l][R], k])
            vals = np.concatenate([self.v[l][R], v])
            x = m.finish_layer(l, x, attend(q, q_pos, keys, k_pos, vals, visible, m.inv_freq))
            self.k[l] = np.concatenate([self.k[l], k])
            self.v[l] = np.concatenate([self.v[l], v])
        self.n = n + span
        return m.logits(x)


def greedy(logits: np.ndarray):
    """(argmax, top-1 minus top-2) of one logits vector."""
    order = np.argsort(-logits, kind="stable")
    return int(order[0]), float(logits[order[0]] - logits[order[1]])


def generate_full(model: Model, ids: Sequence[int], steps: int):
    """Greedy continuation under full causal attention (recomputed from
    scratch each token). Returns tokens, margins, and logits per choice."""
    seq = list(ids)
    toks, margins, logits = [], [], []
    for _ in range(steps):
        lg = model.forward_full(seq)[-1]
        t, mg = greedy(lg)
        toks.append(t)
        margins.append(mg)
        logits.append(lg)
        seq.append(t)
    return toks, margins, logits


def generate_bounded(model: Model, voice: Sequence[int], prompt: Sequence[int], steps: int,
                     sink: int, window: int, mode: str):
    """The mstar protocol: voice prefilled as one causal step, the prompt as
    one causal step, then each chosen token fed back as a one-token step.
    Choice k is the argmax of logits[k]: k = 0 from the prompt step's last
    position, k >= 1 from the step that fed token k-1. Returns tokens,
    margins, logits per choice, and the stream (for checks)."""
    s = Stream(model, sink, window, mode)
    if len(voice):
        s.step(voice)
    lg = s.step(prompt)[-1]
    toks, margins, logits = [], [], []
    for k in range(steps):
        if k > 0:
            lg = s.step([toks[-1]])[-1]
        t, mg = greedy(lg)
        toks.append(t)
        margins.append(mg)
        logits.append(lg)
    return toks, margins, logits, s


def _ids(text: str) -> List[int]:
    return [int(t) for t in text.split(",") if t.strip()]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder")
    ap.add_argument("--ids", required=True, help="prompt ids, comma-separated")
    ap.add_argument("--voice", default="", help="voice ids (bounded runs only)")
    ap.add_argument("--generate", type=int, default=1)
    ap.add_argument("--sink", type=int)
    ap.add_argument("--window", type=int)
    ap.add_argument("--mode", choices=("stream", "cache"), default="stream")
    a = ap.parse_args()
    model = Model(*load_folder(a.folder))
    if a.sink is None and a.window is None:
        toks, margins, logits = generate_full(model, _ids(a.voice) + _ids(a.ids), a.generate)
    else:
        toks, margins, logits, _ = generate_bounded(model, _ids(a.voice), _ids(a.ids), a.generate,
                                                    a.sink or 0, a.window or 0, a.mode)
    for k, (t, mg, lg) in enumerate(zip(toks, margins, logits)):
        top = np.argsort(-lg, kind="stable")[:5]
        print(f"{k:3d} token {t:6d} margin {mg:.6f} top5 " +
              " ".join(f"{int(i)}:{lg[i]:.4f}" for i in top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
