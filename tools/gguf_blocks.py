#!/usr/bin/env python3
"""gguf_blocks.py - ggml tensor encodings in numpy: quantise and dequantise.

An implementation written from ggml's published definitions (the block
structs of ggml-common.h, the reference row (de)quantisers of ggml-quants.c)
for the types mstar reads from GGUF files.  numpy and the standard library
only.  Used by tools/hf_to_gguf.py (writing) and tools/gguf_dump.py (reading),
and by mstar's C++ tests as the independent dequantiser.

    quantize(values, ggml_type)            -> 1-D uint8 array (the tensor's bytes)
    dequantize(raw, ggml_type, n_elements) -> 1-D float32 array
    python3 tools/gguf_blocks.py --self-test

`values` is float32 of shape (rows, ne0) (a 1-D array is one row); ne0, the
row length (ggml's ne[0]), must be a multiple of the type's block size,
since blocks never straddle rows.  Rows are written one after another.

Types (ggml type number: block elements, block bytes, layout, little-endian):

  F32  (0):   1,   4  float32
  F16  (1):   1,   2  IEEE half, rounded to nearest even
  Q4_0 (2):  32,  18  f16 d; 16 bytes qs: byte j holds element j in its low
                      nibble and element j+16 in its high nibble;
                      y = (q - 8) * d
  Q8_0 (8):  32,  34  f16 d; 32 int8 qs; y = q * d
  Q4_K (12): 256, 144 f16 d, f16 dmin; 12 bytes of 6-bit scales/mins for the 8
                      sub-blocks of 32 (see _pack_scale_min); 128 bytes qs:
                      for each 64-element chunk c (0..3), byte 32c+l holds
                      element 64c+l (low nibble) and 64c+32+l (high nibble);
                      y = (d*sc) * q - (dmin*m)
  Q5_K (13): 256, 176 d, dmin, 12 scale bytes as Q4_K; 32 bytes qh; 128 bytes qs
                      as Q4_K's; element 64c+l takes bit 2c of qh[l] as its 5th
                      bit, element 64c+32+l bit 2c+1; y = (d*sc) * q - (dmin*m)
  Q6_K (14): 256, 210 128 bytes ql, 64 bytes qh, 16 int8 scales (one per 16
                      elements), f16 d.  For each half h (128 elements):
                      ql[64h+l] = low 4 bits of element 128h+l | of 128h+l+64 << 4,
                      ql[64h+32+l] likewise for 128h+l+32 and 128h+l+96,
                      qh[32h+l] = high 2 bits of elements 128h+l, +32, +64, +96
                      at bits 0, 2, 4, 6; y = (d * sc) * (q - 32)
  BF16 (30):  1,   2  upper half of the float32, rounded to nearest even
                      (NaN kept quiet)

Dequantisation follows the reference arithmetic in float32, operation for
operation: f16 -> f32 exactly, then Q4_0/Q8_0 float(q) * d; Q4_K/Q5_K
d1 = d * sc, m1 = dmin * m, y = d1 * q - m1; Q6_K y = (d * sc) * q.  Every
product here is exact in float32 (at most 11 + 8 + 6 significant bits), so
the only rounding is Q4_K/Q5_K's final subtraction, and a fused multiply-add
gives the same bits.  The order still fixes the sign of a zero result
(e.g. Q6_K (d*sc)*0 with d*sc < 0 is -0.0), which is why it is kept.

Quantisation:
  * Q8_0, Q4_0: ggml's reference quantisers exactly.  Q8_0: amax = max|x|,
    d = amax/127, id = 1/d (0 if d = 0), q = roundf(x*id) (half away from
    zero).  Q4_0: max = the signed value of largest magnitude (first one on a
    tie), d = max/-8, id = 1/d, q = min(15, (int8)(x*id + 8.5)).  Both store
    f16(d) but quantise with the float32 d.
  * Q4_K, Q5_K, Q6_K: the same algorithms as ggml's reference quantisers
    without an importance matrix (what llama-quantize runs without
    --imatrix): per sub-block a weighted least-squares search over candidate
    scales (Q4_K/Q5_K: make_qkx2_quants, scale and min, weights
    sqrt(mean x^2) + |x|, 21 / 16 candidates; Q6_K: make_qx_quants, signed
    scale, weights x^2, 19 candidates), the sub-block scales quantised to 6
    bits (Q4_K/Q5_K, against d = max scale/63, dmin = max min/63) or int8
    (Q6_K, d = -max scale/128), then every value re-quantised against its
    stored scale (a sub-block whose stored scale is 0 keeps the search's
    values).  Rounding is ggml's nearest_int (ties to even).  As in the
    reference, a better (scale, min) found during make_qkx2_quants' search
    moves the min (and so the range) the later candidates use.  Sums are
    accumulated in the reference's element order in float32, but the bytes
    are not promised identical to a given llama.cpp build: a C compiler may
    contract a*b+c into a fused multiply-add inside those sums, which can
    move a near-tie.  The output is always valid and close; dequantize() is
    the exact part.
"""

import os
import sys

try:
    import numpy as np
except ImportError:
    # A python3 without numpy (e.g. a pyenv shim first on PATH): rerun the
    # program (this tool, or hf_to_gguf.py and gguf_dump.py, which import
    # this module first) under Debian's, which has it, if that is another.
    for _alt in ("/usr/bin/python3", "/bin/python3"):
        if os.access(_alt, os.X_OK) and os.path.realpath(_alt) != os.path.realpath(sys.executable):
            os.execv(_alt, [_alt] + sys.argv)
    sys.exit("error: this tool needs numpy (Debian: apt-get install python3-numpy)")

F32, F16, Q4_0, Q8_0, Q4_K, Q5_K, Q6_K, BF16 = 0, 1, 2, 8, 12, 13, 14, 30

# ggml type -> (name, elements per block, bytes per block)
TYPES = {
    F32: ("F32", 1, 4),
    F16: ("F16", 1, 2),
    Q4_0: ("Q4_0", 32, 18),
    Q8_0: ("Q8_0", 32, 34),
    Q4_K: ("Q4_K", 256, 144),
    Q5_K: ("Q5_K", 256, 176),
    Q6_K: ("Q6_K", 256, 210),
    BF16: ("BF16", 1, 2),
}
NAMES = {v[0]: k for k, v in TYPES.items()}

QK_K = 256
GROUP_MAX_EPS = np.float32(1e-15)
# quantise this many blocks' worth of values at a time (bounds temporaries)
CHUNK_ELEMS = 1 << 20

f32 = np.float32


def type_name(gtype):
    return TYPES[gtype][0] if gtype in TYPES else f"type{gtype}"


def block_size(gtype):
    return TYPES[gtype][1]


def type_size(gtype):
    return TYPES[gtype][2]


def row_bytes(gtype, ne0):
    """Bytes of one row of ne0 elements; ValueError if ne0 is not whole blocks."""
    _, bs, ts = _info(gtype)
    if ne0 % bs:
        raise ValueError(f"{type_name(gtype)}: row length {ne0} is not a multiple of {bs}")
    return ne0 // bs * ts


def nbytes(gtype, n_elements):
    _, bs, ts = _info(gtype)
    if n_elements % bs:
        raise ValueError(f"{type_name(gtype)}: {n_elements} elements is not a multiple of {bs}")
    return n_elements // bs * ts


def _info(gtype):
    if gtype not in TYPES:
        raise ValueError(f"ggml type {gtype} is not supported (have {sorted(TYPES)})")
    return TYPES[gtype]


# ----------------------------------------------------------------- scalar helpers
def f32_to_bf16_bits(a):
    """float32 -> bf16 bit pattern (uint16): round to nearest even, NaN made quiet."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    r = ((u + np.uint32(0x7FFF) + ((u >> 16) & np.uint32(1))) >> 16).astype(np.uint16)
    nan = (u & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
    if nan.any():
        r[nan] = ((u[nan] >> 16) | np.uint32(0x40)).astype(np.uint16)
    return r


def _half(a):
    """float32 -> f16 (round to nearest even, as GGML_FP32_TO_FP16)."""
    return np.asarray(a, dtype=np.float32).astype(np.float16)


def _nearest_int(v):
    """ggml's nearest_int: float32 rounded to nearest, ties to even."""
    return np.rint(v).astype(np.int32)


def _roundf(v):
    """C roundf (ties away from zero) of float32 values, as int32.  Computed in
    float64, where |v| + 0.5 is exact for any float32 v."""
    d = np.asarray(v, dtype=np.float64)
    return (np.sign(d) * np.floor(np.abs(d) + 0.5)).astype(np.int32)


def _seqsum(a):
    """Sum over axis 0 in index order (s = 0; s += a[0]; s += a[1]; ...) in float32."""
    s = np.zeros(a.shape[1:], dtype=np.float32)
    for i in range(a.shape[0]):
        s += a[i]
    return s


def _recip_or_zero(d):
    out = np.zeros_like(d)
    nz = d != 0
    out[nz] = f32(1) / d[nz]
    return out


# ----------------------------------------------------------------- 6-bit scale packing (Q4_K, Q5_K)
def _pack_scale_min(ls, lm):
    """ls, lm: uint8 (8, nb), each < 64 -> (nb, 12) bytes, ggml's K_SCALE layout:
    sub-blocks 0..3 keep scale/min in the low 6 bits of bytes j / j+4; sub-blocks
    4..7 keep their low 4 bits in byte j+4 (scale low nibble, min high nibble)
    and their top 2 bits in bits 6-7 of bytes j-4 (scale) and j (min)."""
    nb = ls.shape[1]
    s = np.zeros((12, nb), dtype=np.uint8)
    for j in range(4):
        s[j] = ls[j]
        s[j + 4] = lm[j]
    for j in range(4, 8):
        s[j + 4] = (ls[j] & 0xF) | ((lm[j] & 0xF) << 4)
        s[j - 4] |= (ls[j] >> 4) << 6
        s[j] |= (lm[j] >> 4) << 6
    return s.T


def _unpack_scale_min(s):
    """(nb, 12) bytes -> sc, m: uint8 (nb, 8) (ggml's get_scale_min_k4 for j = 0..7)."""
    sc = np.empty((s.shape[0], 8), dtype=np.uint8)
    m = np.empty_like(sc)
    for j in range(8):
        if j < 4:
            sc[:, j] = s[:, j] & 63
            m[:, j] = s[:, j + 4] & 63
        else:
            sc[:, j] = (s[:, j + 4] & 0xF) | ((s[:, j - 4] >> 6) << 4)
            m[:, j] = (s[:, j + 4] >> 4) | ((s[:, j] >> 6) << 4)
    return sc, m


# ----------------------------------------------------------------- F32 / F16 / BF16
def _q_plain(x, gtype):
    if gtype == F32:
        return np.ascontiguousarray(x, dtype="<f4").view(np.uint8).reshape(-1)
    if gtype == F16:
        return np.ascontiguousarray(x.astype("<f2")).view(np.uint8).reshape(-1)
    return f32_to_bf16_bits(x).astype("<u2").view(np.uint8).reshape(-1)


# ----------------------------------------------------------------- Q8_0
def _q8_0(x):
    """x: (nb, 32) float32 -> (nb, 34) bytes."""
    amax = np.max(np.abs(x), axis=1)
    d = amax / f32(127)
    idv = _recip_or_zero(d)
    q = _roundf(x * idv[:, None]).astype(np.int8)
    out = np.empty((x.shape[0], 34), dtype=np.uint8)
    out[:, 0:2] = _half(d).astype("<f2").view(np.uint8).reshape(-1, 2)
    out[:, 2:] = q.view(np.uint8)
    return out


def _dq8_0(b):
    d = b[:, 0:2].copy().view("<f2").astype(np.float32)           # (nb, 1)
    q = b[:, 2:].view(np.int8).astype(np.float32)
    return q * d


# ----------------------------------------------------------------- Q4_0
def _q4_0(x):
    """x: (nb, 32) float32 -> (nb, 18) bytes."""
    nb = x.shape[0]
    idx = np.argmax(np.abs(x), axis=1)               # first of the largest magnitudes
    mx = x[np.arange(nb), idx]
    d = mx / f32(-8)
    idv = _recip_or_zero(d)
    v = x * idv[:, None] + f32(8.5)
    q = np.minimum(15, np.trunc(v).astype(np.int32)).astype(np.uint8)
    out = np.empty((nb, 18), dtype=np.uint8)
    out[:, 0:2] = _half(d).astype("<f2").view(np.uint8).reshape(-1, 2)
    out[:, 2:] = q[:, :16] | (q[:, 16:] << 4)
    return out


def _dq4_0(b):
    d = b[:, 0:2].copy().view("<f2").astype(np.float32)
    qs = b[:, 2:]
    q = np.concatenate([(qs & 0xF), (qs >> 4)], axis=1).astype(np.int32) - 8
    return q.astype(np.float32) * d


# ----------------------------------------------------------------- K-quant searches
def _make_qkx2(x, w, nmax, rmin, rdelta, nstep):
    """Scale/min search of ggml's make_qkx2_quants (squared error), vectorised over
    sub-blocks.  x, w: float32 (n, R) (one sub-block per column).
    Returns scale (R,), the_min (R,) (the positive offset), L uint8 (n, R)."""
    mn = np.min(x, axis=0)
    mx = np.max(x, axis=0)
    sum_w = _seqsum(w)
    sum_x = _seqsum(w * x)
    mn = np.minimum(mn, f32(0))
    flat = mx == mn
    rng = np.where(flat, f32(1), mx - mn)
    iscale = f32(nmax) / rng
    scale = f32(1) / iscale
    L = np.clip(_nearest_int(iscale * (x - mn)), 0, nmax)
    diff = scale * L.astype(np.float32) + mn - x
    best = _seqsum(w * (diff * diff))
    for step in range(nstep + 1):
        # as in the reference, a better (scale, min) found on the way moves the
        # min used by the following candidates, range included
        rng = np.where(flat, f32(1), mx - mn)
        iscale = (f32(rmin) + f32(rdelta) * f32(step) + f32(nmax)) / rng
        La = np.clip(_nearest_int(iscale * (x - mn)), 0, nmax)
        lf = La.astype(np.float32)
        wl = w * lf
        sum_l = _seqsum(wl)
        sum_l2 = _seqsum(wl * lf)
        sum_xl = _seqsum(wl * x)
        D = sum_w * sum_l2 - sum_l * sum_l
        ok = D > 0
        Ds = np.where(ok, D, f32(1))
        this_scale = (sum_w * sum_xl - sum_x * sum_l) / Ds
        this_min = (sum_l2 * sum_x - sum_l * sum_xl) / Ds
        pos = this_min > 0
        if pos.any():
            this_min = np.where(pos, f32(0), this_min)
            l2s = np.where(sum_l2 != 0, sum_l2, f32(1))
            this_scale = np.where(pos, sum_xl / l2s, this_scale)
        diff = this_scale * lf + this_min - x
        cur = _seqsum(w * (diff * diff))
        better = ok & (cur < best) & ~flat
        if better.any():
            L = np.where(better, La, L)
            best = np.where(better, cur, best)
            scale = np.where(better, this_scale, scale)
            mn = np.where(better, this_min, mn)
    scale = np.where(flat, f32(0), scale)
    L = np.where(flat, 0, L)
    return scale.astype(np.float32), (-mn).astype(np.float32), L.astype(np.uint8)


def _make_qx(x, nmax):
    """Signed-scale search of ggml's make_qx_quants with rmse_type 1 (weights x^2),
    vectorised.  x: float32 (n, R).  Returns scale (R,), L uint8 (n, R) = l + nmax."""
    n, R = x.shape
    idx = np.argmax(np.abs(x), axis=0)                    # first of the largest magnitudes
    mx = x[idx, np.arange(R)]
    zero = np.abs(mx) < GROUP_MAX_EPS
    mxs = np.where(zero, f32(1), mx)
    w = x * x
    wx = w * x

    def trial(iscale):
        l = np.clip(_nearest_int(iscale * x), -nmax, nmax - 1)
        lf = l.astype(np.float32)
        return l, _seqsum(wx * lf), _seqsum((w * lf) * lf)

    l, sumlx, suml2 = trial(f32(-nmax) / mxs)
    L = l + nmax
    scale = np.where(suml2 != 0, sumlx / np.where(suml2 != 0, suml2, f32(1)), f32(0))
    best = scale * sumlx
    for step in range(-9, 10):
        if step == 0:
            continue
        iscale = -(f32(nmax) + f32(0.1) * f32(step)) / mxs
        l, sumlx, suml2 = trial(iscale)
        upd = (suml2 > 0) & (sumlx * sumlx > best * suml2)
        if upd.any():
            L = np.where(upd, l + nmax, L)
            new_scale = sumlx / np.where(suml2 > 0, suml2, f32(1))
            scale = np.where(upd, new_scale, scale)
            best = np.where(upd, new_scale * sumlx, best)
    scale = np.where(zero, f32(0), scale)
    L = np.where(zero, 0, L)
    return scale.astype(np.float32), L.astype(np.uint8)


def _k_scales_mins(x, nmax, rmin, rdelta, nstep):
    """Shared first half of Q4_K/Q5_K: x (nb, 256) -> d16, dmin16 (nb,), packed
    scales (nb, 12), L (nb, 256) re-quantised against the stored scales."""
    nb = x.shape[0]
    xs = np.ascontiguousarray(x.reshape(nb * 8, 32).T)          # (32, nb*8)
    av = np.sqrt(_seqsum(xs * xs) / f32(32))
    w = av + np.abs(xs)
    scales, mins, L = _make_qkx2(xs, w, nmax, rmin, rdelta, nstep)
    scales = scales.reshape(nb, 8)
    mins = mins.reshape(nb, 8)
    L = L.T.reshape(nb, 8, 32)
    # C keeps +0 unless a value is greater (a -0.0 min must not reach dmin's sign)
    max_scale = np.max(scales, axis=1)
    max_scale = np.where(max_scale > 0, max_scale, f32(0))
    max_min = np.max(mins, axis=1)
    max_min = np.where(max_min > 0, max_min, f32(0))
    inv_scale = np.where(max_scale > 0, f32(63) / np.where(max_scale > 0, max_scale, f32(1)), f32(0))
    inv_min = np.where(max_min > 0, f32(63) / np.where(max_min > 0, max_min, f32(1)), f32(0))
    # (uint8_t)nearest_int(...) then MIN(63, .): the C conversion wraps modulo 256
    ls = np.minimum(63, _nearest_int(inv_scale[:, None] * scales) & 0xFF).astype(np.uint8)
    lm = np.minimum(63, _nearest_int(inv_min[:, None] * mins) & 0xFF).astype(np.uint8)
    packed = _pack_scale_min(ls.T, lm.T)
    d16 = _half(max_scale / f32(63))
    dmin16 = _half(max_min / f32(63))
    sc, m = _unpack_scale_min(packed)
    dsub = d16.astype(np.float32)[:, None] * sc.astype(np.float32)      # (nb, 8)
    dmsub = dmin16.astype(np.float32)[:, None] * m.astype(np.float32)
    xb = x.reshape(nb, 8, 32)
    nz = dsub != 0
    dsafe = np.where(nz, dsub, f32(1))
    Lr = np.clip(_nearest_int((xb + dmsub[:, :, None]) / dsafe[:, :, None]), 0, nmax)
    L = np.where(nz[:, :, None], Lr, L).reshape(nb, 256).astype(np.uint8)
    return d16, dmin16, packed, L


def _nibbles_k(L):
    """(nb, 256) values < 16 -> (nb, 128) qs: chunk c (64 elements) -> bytes 32c..32c+31."""
    nb = L.shape[0]
    c = L.reshape(nb, 4, 2, 32)
    return (c[:, :, 0, :] | (c[:, :, 1, :] << 4)).reshape(nb, 128)


def _q4_k(x):
    nb = x.shape[0]
    d16, dmin16, packed, L = _k_scales_mins(x, 15, -1.0, 0.1, 20)
    out = np.empty((nb, 144), dtype=np.uint8)
    out[:, 0:2] = d16.astype("<f2").view(np.uint8).reshape(-1, 2)
    out[:, 2:4] = dmin16.astype("<f2").view(np.uint8).reshape(-1, 2)
    out[:, 4:16] = packed
    out[:, 16:] = _nibbles_k(L)
    return out


def _q5_k(x):
    nb = x.shape[0]
    d16, dmin16, packed, L = _k_scales_mins(x, 31, -0.5, 0.1, 15)
    c = L.reshape(nb, 4, 2, 32)
    hi = (c >> 4).astype(np.uint8)                                 # (nb, 4, 2, 32)
    qh = np.zeros((nb, 32), dtype=np.uint8)
    for ci in range(4):
        qh |= hi[:, ci, 0, :] << (2 * ci)
        qh |= hi[:, ci, 1, :] << (2 * ci + 1)
    out = np.empty((nb, 176), dtype=np.uint8)
    out[:, 0:2] = d16.astype("<f2").view(np.uint8).reshape(-1, 2)
    out[:, 2:4] = dmin16.astype("<f2").view(np.uint8).reshape(-1, 2)
    out[:, 4:16] = packed
    out[:, 16:48] = qh
    out[:, 48:] = _nibbles_k(L & 0xF)
    return out


def _dq_k_common(b):
    d = b[:, 0:2].copy().view("<f2").astype(np.float32)                # (nb, 1)
    dmin = b[:, 2:4].copy().view("<f2").astype(np.float32)
    sc, m = _unpack_scale_min(b[:, 4:16])
    d1 = d * sc.astype(np.float32)                                       # (nb, 8)
    m1 = dmin * m.astype(np.float32)
    return d1, m1


def _unnibble_k(qs):
    """(nb, 128) qs -> (nb, 8, 32) values 0..15 in element order."""
    nb = qs.shape[0]
    c = qs.reshape(nb, 4, 32)
    return np.stack([c & 0xF, c >> 4], axis=2).reshape(nb, 8, 32)


def _dq4_k(b):
    nb = b.shape[0]
    d1, m1 = _dq_k_common(b)
    q = _unnibble_k(b[:, 16:]).astype(np.float32)
    return (d1[:, :, None] * q - m1[:, :, None]).reshape(nb, 256)


def _dq5_k(b):
    nb = b.shape[0]
    d1, m1 = _dq_k_common(b)
    qh = b[:, 16:48]
    q = _unnibble_k(b[:, 48:]).astype(np.int32)                         # (nb, 8, 32)
    for s in range(8):                                                   # sub-block s: bit s of qh
        q[:, s, :] += ((qh >> s) & 1).astype(np.int32) << 4
    return (d1[:, :, None] * q.astype(np.float32) - m1[:, :, None]).reshape(nb, 256)


def _q6_k(x):
    nb = x.shape[0]
    xs = np.ascontiguousarray(x.reshape(nb * 16, 16).T)                   # (16, nb*16)
    scales, L = _make_qx(xs, 32)
    scales = scales.reshape(nb, 16)
    L = L.T.reshape(nb, 16, 16).astype(np.int32)
    idx = np.argmax(np.abs(scales), axis=1)
    max_scale = scales[np.arange(nb), idx]
    zero = np.abs(max_scale) < GROUP_MAX_EPS
    iscale = f32(-128) / np.where(zero, f32(1), max_scale)
    d16 = _half(f32(1) / iscale)
    sc = np.minimum(127, _nearest_int(iscale[:, None] * scales)).astype(np.int8)
    dsub = d16.astype(np.float32)[:, None] * sc.astype(np.float32)       # (nb, 16)
    nz = dsub != 0
    dsafe = np.where(nz, dsub, f32(1))
    xb = x.reshape(nb, 16, 16)
    Lr = np.clip(_nearest_int(xb / dsafe[:, :, None]), -32, 31) + 32
    L = np.where(nz[:, :, None], Lr, L).reshape(nb, 2, 4, 32).astype(np.uint8)
    ql = np.empty((nb, 2, 2, 32), dtype=np.uint8)
    ql[:, :, 0, :] = (L[:, :, 0] & 0xF) | ((L[:, :, 2] & 0xF) << 4)
    ql[:, :, 1, :] = (L[:, :, 1] & 0xF) | ((L[:, :, 3] & 0xF) << 4)
    qh = ((L[:, :, 0] >> 4) | ((L[:, :, 1] >> 4) << 2) | ((L[:, :, 2] >> 4) << 4)
          | ((L[:, :, 3] >> 4) << 6))                                    # (nb, 2, 32)
    out = np.zeros((nb, 210), dtype=np.uint8)
    out[:, 0:128] = ql.reshape(nb, 128)
    out[:, 128:192] = qh.reshape(nb, 64)
    out[:, 192:208] = sc.view(np.uint8)
    out[:, 208:210] = d16.astype("<f2").view(np.uint8).reshape(-1, 2)
    out[zero] = 0                      # an all-zero super-block: every byte 0
    return out


def _dq6_k(b):
    nb = b.shape[0]
    ql = b[:, 0:128].reshape(nb, 2, 2, 32)
    qh = b[:, 128:192].reshape(nb, 2, 32)
    sc = b[:, 192:208].view(np.int8).astype(np.float32)                  # (nb, 16)
    d = b[:, 208:210].copy().view("<f2").astype(np.float32)              # (nb, 1)
    q = np.empty((nb, 2, 4, 32), dtype=np.int32)
    q[:, :, 0] = (ql[:, :, 0] & 0xF) | (((qh >> 0) & 3) << 4)
    q[:, :, 1] = (ql[:, :, 1] & 0xF) | (((qh >> 2) & 3) << 4)
    q[:, :, 2] = (ql[:, :, 0] >> 4) | (((qh >> 4) & 3) << 4)
    q[:, :, 3] = (ql[:, :, 1] >> 4) | (((qh >> 6) & 3) << 4)
    q = (q - 32).astype(np.float32).reshape(nb, 16, 16)                 # 16 groups of 16, in order
    ds = d * sc                                                          # (nb, 16): d * sc first
    return (ds[:, :, None] * q).reshape(nb, 256)


_QUANT = {Q8_0: _q8_0, Q4_0: _q4_0, Q4_K: _q4_k, Q5_K: _q5_k, Q6_K: _q6_k}
_DEQUANT = {Q8_0: _dq8_0, Q4_0: _dq4_0, Q4_K: _dq4_k, Q5_K: _dq5_k, Q6_K: _dq6_k}


# ----------------------------------------------------------------- public API
def quantize(values, gtype):
    """float32 values (rows, ne0) or (ne0,) -> the tensor's bytes as a 1-D uint8 array."""
    _, bs, ts = _info(gtype)
    x = np.asarray(values, dtype=np.float32)
    if x.ndim == 0:
        x = x.reshape(1)
    ne0 = x.shape[-1]
    if ne0 % bs:
        raise ValueError(f"{type_name(gtype)}: row length {ne0} is not a multiple of {bs}")
    flat = np.ascontiguousarray(x).reshape(-1)
    if gtype in (F32, F16, BF16):
        return _q_plain(flat, gtype)
    nblocks = flat.size // bs
    out = np.empty((nblocks, ts), dtype=np.uint8)
    step = max(1, CHUNK_ELEMS // bs)
    blocks = flat.reshape(nblocks, bs)
    with np.errstate(all="ignore"):
        for i in range(0, nblocks, step):
            out[i:i + step] = _QUANT[gtype](blocks[i:i + step])
    return out.reshape(-1)


def dequantize(raw, gtype, n_elements):
    """The first nbytes(gtype, n_elements) bytes of raw -> float32 (n_elements,)."""
    _, bs, ts = _info(gtype)
    need = nbytes(gtype, n_elements)
    b = np.frombuffer(raw, dtype=np.uint8) if not isinstance(raw, np.ndarray) else raw.reshape(-1).view(np.uint8)
    if b.size < need:
        raise ValueError(f"{type_name(gtype)}: {n_elements} elements need {need} bytes, got {b.size}")
    b = b[:need]
    if gtype == F32:
        return b.view("<f4").astype(np.float32)
    if gtype == F16:
        return b.view("<f2").astype(np.float32)
    if gtype == BF16:
        return (b.view("<u2").astype(np.uint32) << 16).view(np.float32)
    blocks = b.reshape(-1, ts)
    out = np.empty((blocks.shape[0], bs), dtype=np.float32)
    step = max(1, CHUNK_ELEMS // bs)
    for i in range(0, blocks.shape[0], step):
        out[i:i + step] = _DEQUANT[gtype](blocks[i:i + step])
    return out.reshape(-1)


# ----------------------------------------------------------------- self-test
def _rel_rms(a, b):
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    return float(np.sqrt(np.mean((a - b) ** 2)) / max(np.sqrt(np.mean(b ** 2)), 1e-300))


def _scalar_checks():
    """Hand-made blocks whose dequantised values are known, and corner cases."""
    fails = []

    def check(what, cond):
        if not cond:
            fails.append(what)

    # Q8_0: d = 1.0 (f16 0x3C00), q = -128..-97
    blk = np.zeros(34, np.uint8)
    blk[0:2] = [0x00, 0x3C]
    blk[2:] = np.arange(-128, -96, dtype=np.int8).view(np.uint8)
    check("Q8_0 hand block", np.array_equal(dequantize(blk, Q8_0, 32), np.arange(-128, -96, dtype=np.float32)))
    # Q4_0: d = 2.0; byte j = j (low) | (15-j) << 4
    blk = np.zeros(18, np.uint8)
    blk[0:2] = [0x00, 0x40]
    j = np.arange(16)
    blk[2:] = (j | ((15 - j) << 4)).astype(np.uint8)
    want = np.concatenate([(j - 8) * 2.0, ((15 - j) - 8) * 2.0]).astype(np.float32)
    check("Q4_0 hand block", np.array_equal(dequantize(blk, Q4_0, 32), want))
    # Q4_0 sign of zero: d < 0 and q = 8 gives -0.0, as float(0) * d does in C
    blk[0:2] = [0x00, 0xC0]                          # d = -2.0
    blk[2:] = 0x88
    y = dequantize(blk, Q4_0, 32)
    check("Q4_0 -0.0", np.all(y == 0) and np.all(np.signbit(y)))
    # Q4_K: d = 1, dmin = 0.5, sub-block s has scale s+1 and min 2s, q = element index & 15
    blk = np.zeros(144, np.uint8)
    blk[0:2] = [0x00, 0x3C]
    blk[2:4] = [0x00, 0x38]
    ls = np.arange(1, 9, dtype=np.uint8)[:, None]
    lm = (2 * np.arange(8)).astype(np.uint8)[:, None]
    blk[4:16] = _pack_scale_min(ls, lm)[0]
    q = np.arange(256) & 15
    blk[16:] = _nibbles_k(q[None, :].astype(np.uint8))[0]
    s = np.arange(256) // 32
    want = ((s + 1) * q - 0.5 * 2 * s).astype(np.float32)
    check("Q4_K hand block", np.array_equal(dequantize(blk, Q4_K, 256), want))
    sc, m = _unpack_scale_min(blk[None, 4:16])
    check("Q4_K scale packing", np.array_equal(sc[0], ls[:, 0]) and np.array_equal(m[0], lm[:, 0]))
    # 6-bit values above 15 exercise the top-bit bytes
    ls2 = np.array([63, 0, 17, 32, 48, 33, 63, 16], np.uint8)[:, None]
    lm2 = np.array([5, 63, 40, 1, 62, 31, 16, 47], np.uint8)[:, None]
    sc, m = _unpack_scale_min(_pack_scale_min(ls2, lm2))
    check("K scale packing, 6 bits", np.array_equal(sc[0], ls2[:, 0]) and np.array_equal(m[0], lm2[:, 0]))
    # Q5_K: same scales, q = element index & 31 (the 5th bit through qh)
    blk5 = np.zeros(176, np.uint8)
    blk5[0:16] = blk[0:16]
    q5 = (np.arange(256) * 7) & 31
    qh = np.zeros(32, np.uint8)
    for e in range(256):
        c, half, l = e // 64, (e // 32) % 2, e % 32
        if q5[e] & 16:
            qh[l] |= 1 << (2 * c + half)
    blk5[16:48] = qh
    blk5[48:] = _nibbles_k((q5 & 15)[None, :].astype(np.uint8))[0]
    want = ((s + 1) * q5 - 0.5 * 2 * s).astype(np.float32)
    check("Q5_K hand block", np.array_equal(dequantize(blk5, Q5_K, 256), want))
    # Q6_K: d = 0.25, scales g - 8 for group g of 16, q = (e * 5) & 63
    blk6 = np.zeros(210, np.uint8)
    q6 = (np.arange(256) * 5) & 63
    for e in range(256):
        h, r = e // 128, e % 128
        k, l = r // 32, r % 32
        lo, hi = q6[e] & 15, q6[e] >> 4
        byte = 64 * h + (k % 2) * 32 + l
        blk6[byte] |= lo << (4 * (k // 2))
        blk6[128 + 32 * h + l] |= hi << (2 * k)
    blk6[192:208] = (np.arange(16) - 8).astype(np.int8).view(np.uint8)
    blk6[208:210] = [0x00, 0x34]                       # 0.25
    want = (0.25 * (np.arange(256) // 16 - 8) * (q6 - 32)).astype(np.float32)
    check("Q6_K hand block", np.array_equal(dequantize(blk6, Q6_K, 256), want))
    # Q8_0 rounding is half away from zero: 0.5 and -2.5 steps of d = 1
    x = np.zeros(32, np.float32)
    x[0], x[1], x[2], x[3] = 127.0, 0.5, -2.5, 1.5
    y = dequantize(quantize(x, Q8_0), Q8_0, 32)
    check("Q8_0 roundf", y[1] == 1.0 and y[2] == -3.0 and y[3] == 2.0)
    # Q4_0 picks the signed value of largest magnitude: here -8 -> d = 1, q = 0
    x = np.linspace(-8, 7, 32).astype(np.float32)
    x[5] = -8.0
    y = dequantize(quantize(x, Q4_0), Q4_0, 32)
    check("Q4_0 signed max", y[5] == -8.0 and np.max(np.abs(y - x)) <= 0.5)
    # all-zero input stays zero for every type
    for t in TYPES:
        z = np.zeros((2, 256), np.float32)
        check(f"{type_name(t)} zeros", np.all(dequantize(quantize(z, t), t, z.size) == 0))
    return fails


def self_test():
    rng = np.random.default_rng(1234)
    # bounds on relative RMS error for N(0,1) data (plus a few outliers)
    bounds = {F32: 0.0, F16: 1e-3, BF16: 5e-3, Q8_0: 0.01, Q6_K: 0.02, Q5_K: 0.05,
              Q4_K: 0.10, Q4_0: 0.10}
    ok = True
    rows, ne0 = 48, 512
    x = rng.standard_normal((rows, ne0)).astype(np.float32)
    x[3, 7] = 9.0
    x[10, 300] = -11.0
    x[20] *= 1e-3                         # a row of small values
    x[21, :256] = 0.0                     # an all-zero super-block
    x[22, :256] = -0.75                   # a constant negative super-block
    for t in sorted(TYPES):
        name, bs, ts = TYPES[t]
        raw = quantize(x, t)
        size_ok = raw.dtype == np.uint8 and raw.size == rows * ne0 // bs * ts
        y = dequantize(raw, t, x.size).reshape(x.shape)
        err = _rel_rms(y, x)
        zero_ok = np.all(y[21, :256] == 0)
        const_err = float(np.max(np.abs(y[22, :256] + 0.75)))
        # deterministic: the same input gives the same bytes
        same = np.array_equal(raw, quantize(x, t))
        good = size_ok and err <= bounds[t] and zero_ok and const_err <= 0.75 * 0.02 and same
        ok &= bool(good)
        print(f"{name:5s} block {bs:3d} elems / {ts:3d} B  bytes {raw.size:7d}  "
              f"rel RMS {err:.5f} (bound {bounds[t]})  const-block max err {const_err:.2e}  "
              f"{'ok' if good else 'FAIL'}")
    for t, bs in ((Q8_0, 32), (Q4_0, 32), (Q4_K, 256), (Q5_K, 256), (Q6_K, 256)):
        try:
            quantize(np.zeros((2, bs + bs // 2), np.float32), t)
            print(f"{type_name(t)}: a row of {bs + bs // 2} was accepted  FAIL")
            ok = False
        except ValueError:
            pass
    fails = _scalar_checks()
    for f in fails:
        print(f"hand check failed: {f}")
    ok &= not fails
    print("self-test " + ("passed" if ok else "FAILED"))
    return ok


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(0 if self_test() else 1)
    print(__doc__)
    sys.exit(0 if sys.argv[1:] in ([], ["-h"], ["--help"]) else 2)
