#!/usr/bin/python3
"""Writes tests/data/hf/: three tiny Hugging Face checkpoints with the
outputs of the independent float64 reference (tools/hf/reference.py) in
each folder's golden.json, and tests/data/hf/bad/, broken folders a loader
must refuse (listed in bad/cases.json).

  /usr/bin/python3 tools/make_hf_goldens.py

Rerunning reproduces byte-identical files (same numpy): weights come from
seeded generators, the voice/prompt search is a fixed sequence of seeds,
and logits are written rounded to 9 significant digits so that the last
bits of float64 sums cannot show. docs/hf-decoders.md states the model and
the layout of golden.json. A golden.json is written only after the
reference has passed the checks against itself (the check_* functions);
any failure stops the script.
"""
import os

# Single-threaded BLAS: the same sums in the same order on every run.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import json  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402

sys.dont_write_bytecode = True  # keep the source tree free of __pycache__
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "hf"))

import numpy as np  # noqa: E402

import checkpoint as ck  # noqa: E402
import reference as ref  # noqa: E402

OUT = os.path.join(os.path.dirname(HERE), "tests", "data", "hf")

VOICE_LEN, PROMPT_LEN = 10, 6
FULL_STEPS, BOUNDED_STEPS = 24, 40
# An engine rounding activations to bf16 against the reference doing the
# same (tests/test_hf.cpp): they differ only where the engine's f32 and the
# reference's float64 activations fall on opposite sides of a rounding
# boundary, so the test keeps the f32 tolerance.
BF16_ACT_TOL = 1e-5
SINK, WINDOW = 4, 12          # voice + prompt = 16 = SINK + WINDOW: eviction starts at choice 2
LOGIT_STEPS = [0, 20, 39]
# Every greedy choice must win by this much, relative to the spread (std) of
# its logits vector: f32 arithmetic moves logits by ~1e-6 of that spread, a
# bf16 round of every activation by a few 1e-3. 1e-3 is the floor the
# goldens may never go under.
TARGET_REL_MARGIN = 0.02
FLOOR_REL_MARGIN = 1e-3
# A continuation must use this many distinct tokens (random models like to
# settle on one token; a golden that repeats one token tests less).
MIN_DISTINCT_FULL, MIN_DISTINCT_BOUNDED = 8, 10
MAX_TRIALS = 1000
# If no voice/prompt qualifies, the weights are redrawn with the next seed.
MAX_WEIGHT_SEEDS = 5

GOLDENS = [
    # name, shape (checkpoint.SHAPES), stored dtype, files, weight seed
    dict(name="llama-gqa-bf16", shape="tiny-llama-gqa", dtype="bf16", shards=2, seed=101,
         # Llama 3 style generation config: sampling defaults the goldens ignore.
         generation_config={"bos_token_id": 125, "do_sample": True, "eos_token_id": [126, 127],
                            "temperature": 0.6, "top_p": 0.9,
                            "transformers_version": ck.TRANSFORMERS_VERSION}),
    dict(name="llama-tied-f32", shape="tiny-llama-tied", dtype="f32", shards=1, seed=202),
    dict(name="qwen2-bias-bf16", shape="tiny-qwen2-bias", dtype="bf16", shards=1, seed=303),
]


def fmt(x: float) -> float:
    return float(f"{x:.9g}")


def dump(obj, indent=0) -> str:
    """JSON with dicts spread over lines and lists of numbers on one line."""
    pad = "  " * indent
    if isinstance(obj, dict):
        if not obj:
            return "{}"
        items = [f'{pad}  {json.dumps(k)}: {dump(v, indent + 1)}' for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(obj, list) and any(isinstance(v, (dict, list)) for v in obj):
        items = [f"{pad}  {dump(v, indent + 1)}" for v in obj]
        return "[\n" + ",\n".join(items) + "\n" + pad + "]"
    return json.dumps(obj)


def rel_margins(margins, logits):
    return [m / float(np.std(lg)) for m, lg in zip(margins, logits)]


# ---------------------------------------------------------------- checks

def check(cond: bool, what: str) -> None:
    if not cond:
        raise SystemExit(f"make_hf_goldens: self-check failed: {what}")


def close(a, b, tol=1e-9) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return float(np.max(np.abs(a - b))) <= tol * max(1.0, float(np.max(np.abs(b))))


def nearest_bf16(x32: np.ndarray) -> np.ndarray:
    """bf16 rounding by a second route: of the two bf16 values around x (the
    truncation and the next one away from zero) take the nearer in float64,
    the one with an even last bit on a tie."""
    u = x32.astype(np.float32).view(np.uint32).astype(np.uint64)
    lo = (u & 0xFFFF0000)
    hi = lo + 0x10000
    f = lambda bits: bits.astype(np.uint32).view(np.float32).astype(np.float64)  # noqa: E731
    x = x32.astype(np.float64)
    dlo, dhi = np.abs(x - f(lo)), np.abs(f(hi) - x)
    even_lo = ((lo >> 16) & 1) == 0
    pick_lo = (dlo < dhi) | ((dlo == dhi) & even_lo)
    return np.where(pick_lo, f(lo), f(hi))


def check_rounding() -> None:
    # Ties go to the even pattern, both ways; non-ties to the nearer value.
    cases = {1 + 2**-8: 1.0, 1 + 3 * 2**-8: 1 + 2**-6, -(1 + 2**-8): -1.0,
             1 + 2**-8 + 2**-20: 1 + 2**-7, 1 + 2**-9: 1.0, 3.0: 3.0}
    x = np.array(list(cases), dtype=np.float32)
    got = (ck.round_bf16_bits(x).astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    check(np.array_equal(got, np.array(list(cases.values()))), "bf16 round-to-nearest-even cases")
    r = np.random.default_rng(7).standard_normal(100000).astype(np.float32)
    got = (ck.round_bf16_bits(r).astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    check(np.array_equal(got, nearest_bf16(r)), "bf16 rounding agrees with the nearest-value route")


def check_stored(specs, seed, dtype, weights) -> None:
    """Loaded weights are exactly the generated float32 values rounded to
    the stored dtype."""
    for s in specs:
        x = ck.tensor_values(s, seed)
        if dtype == "f32":
            want = x.astype(np.float64)
        elif dtype == "f16":
            want = x.astype(np.float16).astype(np.float64)
        else:
            want = nearest_bf16(x.reshape(-1)).reshape(x.shape)
        check(np.array_equal(weights[s.name], want), f"stored {s.name} is the {dtype} rounding")


def check_rope(model: ref.Model, cfg: dict) -> None:
    D = model.D
    base = 1.0 / float(cfg["rope_theta"]) ** (np.arange(0, D, 2) / D)
    kind = ref.rope_type_of(cfg)
    inv = model.inv_freq
    if kind == "default":
        check(np.array_equal(inv, base), "default inv_freq")
    elif kind == "linear":
        check(np.allclose(inv, base / cfg["rope_scaling"]["factor"], rtol=1e-15), "linear inv_freq")
    elif kind == "llama3":
        rs = cfg["rope_scaling"]
        old, fac = rs["original_max_position_embeddings"], rs["factor"]
        bands = []
        for i, f in enumerate(base):
            wl = 2 * np.pi / f
            if wl < old / rs["high_freq_factor"]:
                bands.append("keep")
                check(inv[i] == f, f"llama3 keeps inv_freq[{i}]")
            elif wl > old / rs["low_freq_factor"]:
                bands.append("divide")
                check(inv[i] == f / fac, f"llama3 divides inv_freq[{i}]")
            else:
                bands.append("smooth")
                s = (old / wl - rs["low_freq_factor"]) / (rs["high_freq_factor"] - rs["low_freq_factor"])
                check(abs(inv[i] - (f / fac + s * (f - f / fac))) <= 1e-15 * f, f"llama3 smooths inv_freq[{i}]")
        # The tiny config is chosen so that every branch is exercised.
        check(set(bands) == {"keep", "smooth", "divide"}, f"llama3 bands all used: {bands}")
    # rotate_half pairs element i with i + D/2: the same as turning the
    # complex number x_i + j x_{i+D/2} by e^{j pos inv_freq_i}.
    x = np.random.default_rng(3).standard_normal((5, 2, D))
    pos = np.array([0, 1, 7, 20, 55])
    z = (x[..., :D // 2] + 1j * x[..., D // 2:]) * np.exp(1j * pos[:, None, None] * inv[None, None, :])
    check(np.allclose(ref.rope(x, pos, inv), np.concatenate([z.real, z.imag], -1), atol=1e-13),
          "rotate_half rope is the complex rotation of pairs (i, i + D/2)")


def check_gqa(model: ref.Model, cfg: dict, weights: dict, ids) -> None:
    """GQA equals MHA with each KV head copied to the query heads h with
    h // (Hq / Hkv) = that KV head."""
    if model.Hq == model.Hkv:
        return
    rep = model.Hq // model.Hkv
    w = dict(weights)
    for l in range(model.L):
        for proj in ("k", "v"):
            for kind in ("weight", "bias"):
                name = f"model.layers.{l}.self_attn.{proj}_proj.{kind}"
                if name in w:
                    t = w[name].reshape(model.Hkv, model.D, -1)
                    w[name] = np.repeat(t, rep, axis=0).reshape(model.Hq * model.D, *w[name].shape[1:])
    mha = ref.Model(dict(cfg, num_key_value_heads=model.Hq), w)
    check(close(mha.forward_full(ids), model.forward_full(ids), 1e-12), "GQA == MHA with repeated KV heads")


def check_matrix_attention(model: ref.Model, ids) -> None:
    """ref.attend (per-query visible lists) against the way transformers
    writes causal attention: KV heads repeated to the query heads, one score
    matrix per head, an additive -inf mask above the diagonal."""
    n = len(ids)
    pos = np.arange(n)
    mask = np.triu(np.full((n, n), -np.inf), 1)
    rep = model.Hq // model.Hkv
    x = model.embed(ids)
    for l in range(model.L):
        q, k, v = model.qkv(l, x)
        q = ref.rope(q, pos, model.inv_freq).transpose(1, 0, 2)           # [Hq, n, D]
        k = np.repeat(ref.rope(k, pos, model.inv_freq), rep, axis=1).transpose(1, 0, 2)
        v = np.repeat(v, rep, axis=1).transpose(1, 0, 2)
        s = q @ k.transpose(0, 2, 1) / np.sqrt(model.D) + mask
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        x = model.finish_layer(l, x, (p @ v).transpose(1, 0, 2))
    check(close(model.logits(x), model.forward_full(ids), 1e-12), "attend == masked-matrix attention")


def check_files(g: dict, cfg: dict, weights: dict) -> None:
    """The same weights through another file layout load identically:
    one file instead of shards; and for tied models, an untied copy whose
    lm_head is the embedding gives the same logits."""
    with tempfile.TemporaryDirectory() as tmp:
        specs = ck.tensor_specs(cfg)
        if g["shards"] > 1:
            d = os.path.join(tmp, "single")
            ck.write_checkpoint(d, cfg, dtype=g["dtype"], seed=g["seed"], shards=1)
            _, w1 = ref.load_folder(d)
            check(w1.keys() == weights.keys() and all(np.array_equal(w1[k], weights[k]) for k in w1),
                  "sharded and single-file folders hold the same tensors")
        if cfg["tie_word_embeddings"]:
            d = os.path.join(tmp, "untied")
            ucfg = dict(cfg, tie_word_embeddings=False)
            emb = weights["model.embed_tokens.weight"].astype(np.float32)  # exact: stored values
            uspecs = specs + [ck.TensorSpec("lm_head.weight", emb.shape, "lm_head", values=emb)]
            ck.write_checkpoint(d, ucfg, dtype=g["dtype"], seed=g["seed"], specs=uspecs)
            ids = list(range(3, 3 + 12))
            tied = ref.Model(cfg, weights).forward_full(ids)
            untied = ref.Model(*ref.load_folder(d)).forward_full(ids)
            check(np.array_equal(tied, untied), "tied == untied with lm_head = embedding")


def check_bounded_semantics(model: ref.Model, voice, prompt, runs, full_teacher) -> None:
    # While nothing is evicted (n <= sink + window) both position modes are
    # full causal attention: checked step by step over a long run with a
    # window that never fills.
    big = VOICE_LEN + PROMPT_LEN + BOUNDED_STEPS
    toks_f, _, lg_f = ref.generate_full(model, list(voice) + list(prompt), BOUNDED_STEPS)
    for mode in ("stream", "cache"):
        toks, _, lg, _ = ref.generate_bounded(model, voice, prompt, BOUNDED_STEPS, SINK, big, mode)
        check(toks == toks_f and close(lg, lg_f), f"{mode} mode == full attention while nothing is evicted")
    # In the real run, choices made by steps that start with nothing evicted
    # (n <= sink + window, which n + span <= sink + window implies) equal
    # full attention: here choices 0 and 1.
    checked = 0
    for mode, (toks, _, lg) in runs.items():
        for k in range(BOUNDED_STEPS):
            n = VOICE_LEN if k == 0 else VOICE_LEN + PROMPT_LEN + k - 1
            if n <= SINK + WINDOW:
                check(close(lg[k], full_teacher[mode][k]), f"{mode} choice {k} (nothing evicted) == full")
                checked += 1
    check(checked == 4, "choices 0 and 1 of both modes were compared with full attention")
    # With no sink the retained entries are contiguous, so cache positions
    # are stream positions shifted by a constant, and RoPE attention depends
    # only on differences: the two modes must agree.
    a = ref.generate_bounded(model, voice, prompt, BOUNDED_STEPS, 0, WINDOW, "stream")
    b = ref.generate_bounded(model, voice, prompt, BOUNDED_STEPS, 0, WINDOW, "cache")
    check(a[0] == b[0] and close(a[2], b[2]), "sink 0: stream and cache modes agree (RoPE is relative)")
    # Retention as the definition states it, at a few stream lengths.
    check(list(ref.retained(16, 4, 12)) == list(range(16)), "retained at n = 16")
    check(list(ref.retained(17, 4, 12)) == [0, 1, 2, 3] + list(range(5, 17)), "retained at n = 17")
    check(list(ref.retained(3, 4, 12)) == [0, 1, 2], "retained at n = 3")
    check(list(ref.retained(30, 0, 5)) == list(range(25, 30)), "retained, no sink")
    # The goldens must tell the modes apart, and bounded from full: the
    # logits of the later recorded steps differ clearly.
    for k in LOGIT_STEPS[1:]:
        ls, lc = runs["stream"][2][k], runs["cache"][2][k]
        scale = float(np.std(ls))
        check(np.max(np.abs(ls - lc)) > 0.05 * scale, f"stream and cache logits differ at step {k}")
        for mode in ("stream", "cache"):
            lb = runs[mode][2][k]
            check(np.max(np.abs(lb - full_teacher[mode][k])) > 0.05 * scale,
                  f"{mode} logits differ from full attention at step {k}")


def teacher_forced_full(model, voice, prompt, toks):
    """Full-attention logits for each choice of a bounded run, fed the same
    tokens: logits[k] for the sequence voice ++ prompt ++ toks[:k]."""
    lg = model.forward_full(list(voice) + list(prompt) + list(toks[:-1]))
    return [lg[VOICE_LEN + PROMPT_LEN - 1 + k] for k in range(len(toks))]


# ---------------------------------------------------------------- goldens

def run_all(model, voice, prompt, target=None):
    """The three greedy runs of a golden and their smallest relative margin.
    With `target`, gives up (returns None) as soon as a run falls short of
    it or repeats itself, which keeps the search cheap."""
    def fails(toks, margins, logits, distinct):
        return target is not None and (min(rel_margins(margins, logits)) < target
                                       or len(set(toks)) < distinct)
    full = ref.generate_full(model, list(voice) + list(prompt), FULL_STEPS)
    if fails(*full, MIN_DISTINCT_FULL):
        return None
    runs = {}
    for mode in ("stream", "cache"):
        toks, margins, logits, _ = ref.generate_bounded(model, voice, prompt, BOUNDED_STEPS, SINK, WINDOW, mode)
        if fails(toks, margins, logits, MIN_DISTINCT_BOUNDED):
            return None
        runs[mode] = (toks, margins, logits)
    rel = rel_margins(full[1], full[2])
    for toks, margins, logits in runs.values():
        rel += rel_margins(margins, logits)
    return full, runs, min(rel)


def pick_ids(model, cfg, seed):
    """Voice and prompt ids from a fixed sequence of seeds: the first whose
    greedy choices all clear TARGET_REL_MARGIN and whose continuations are
    not stuck on a few tokens. Ids avoid bos and eos. None if no trial
    qualifies."""
    eos = cfg["eos_token_id"]
    special = set(eos if isinstance(eos, list) else [eos]) | {cfg["bos_token_id"]}
    allowed = np.array([i for i in range(cfg["vocab_size"]) if i not in special])
    for trial in range(MAX_TRIALS):
        r = np.random.default_rng([seed, trial])
        voice = [int(i) for i in r.choice(allowed, VOICE_LEN)]
        prompt = [int(i) for i in r.choice(allowed, PROMPT_LEN)]
        got = run_all(model, voice, prompt, TARGET_REL_MARGIN)
        if got is not None:
            return (got[2], trial, voice, prompt) + got[:2]
    return None


def make_golden(g: dict) -> dict:
    folder = os.path.join(OUT, g["name"])
    cfg = ck.shape_config(g["shape"], g["dtype"])
    specs = ck.tensor_specs(cfg)
    for seed in range(g["seed"], g["seed"] + MAX_WEIGHT_SEEDS):
        shutil.rmtree(folder, ignore_errors=True)
        files = ck.write_checkpoint(folder, cfg, dtype=g["dtype"], seed=seed, shards=g["shards"],
                                    generation_config=g.get("generation_config"))
        cfg_read, weights = ref.load_folder(folder)
        check(cfg_read == cfg, "config.json reads back")
        check_stored(specs, seed, g["dtype"], weights)
        model = ref.Model(cfg, weights)
        picked = pick_ids(model, cfg, seed)
        if picked is not None:
            break
    else:
        raise SystemExit(f"make_hf_goldens: {g['name']}: no weights and ids found whose greedy margins "
                         f"all clear {TARGET_REL_MARGIN}")
    m, trial, voice, prompt, full, runs = picked
    check(m >= FLOOR_REL_MARGIN, f"{g['name']}: relative margin {m:.2e} under the floor")
    check_rope(model, cfg)
    check_files(dict(g, seed=seed), cfg, weights)
    check_gqa(model, cfg, weights, voice + prompt)
    check_matrix_attention(model, voice + prompt + full[0])
    teacher = {mode: teacher_forced_full(model, voice, prompt, runs[mode][0]) for mode in runs}
    check_bounded_semantics(model, voice, prompt, runs, teacher)
    # Full: the logits of choice 0 are those of the last prompt position.
    check(close(full[2][0], model.forward_full(voice + prompt)[-1], 0), "full choice 0 logits")
    # The same logits with every product's input rounded to bf16; the test
    # holds an engine in that mode to BF16_ACT_TOL of them, which must be far
    # below how much the rounding moves them, or it could not tell the modes
    # apart.
    bf16_act = ref.Model(cfg, weights, activations="bf16").forward_full(voice + prompt)[-1]
    moved = float(np.max(np.abs(bf16_act - full[2][0])))
    check(moved >= 10 * BF16_ACT_TOL, f"{g['name']}: bf16 activations move the logits by {moved:.2e} only")

    all_margins = list(full[1]) + [x for r in runs.values() for x in r[1]]
    golden = {
        "format": "mstar-hf-golden-1",
        "name": g["name"],
        "config": cfg,
        "derived": {
            "head_dim": model.D,
            "kv_group": model.Hq // model.Hkv,
            "rope_type": ref.rope_type_of(cfg),
            "inv_freq": [float(f"{x:.17g}") for x in model.inv_freq],
            "weight_dtype": g["dtype"],
            "files": sorted(files),
            "weight_seed": seed,
            "ids_trial": trial,
        },
        "voice": voice,
        "prompt": prompt,
        "full": {
            "steps": FULL_STEPS,
            "logits": [fmt(x) for x in full[2][0]],
            "tokens": full[0],
            "margins": [fmt(x) for x in full[1]],
        },
        "bounded": {
            "sink": SINK,
            "window": WINDOW,
            "window_includes_step": False,
            "steps": BOUNDED_STEPS,
            "logit_steps": LOGIT_STEPS,
        },
        "bf16_activations": {
            "logits": [fmt(x) for x in bf16_act],
            "moved_from_f32": fmt(moved),
        },
        "min_margin": fmt(min(all_margins)),
        "min_relative_margin": fmt(m),
    }
    for mode, (toks, margins, logits) in runs.items():
        golden["bounded"][mode] = {
            "tokens": toks,
            "margins": [fmt(x) for x in margins],
            "logits": [[fmt(x) for x in logits[k]] for k in LOGIT_STEPS],
        }
    with open(os.path.join(folder, "golden.json"), "w") as f:
        f.write(dump(golden) + "\n")
    size = sum(os.path.getsize(os.path.join(folder, x)) for x in os.listdir(folder))
    print(f"{g['name']}: {size / 1024:.0f} KiB, ids trial {trial}, min margin {min(all_margins):.4f}, "
          f"min relative margin {m:.4f}; full {full[0][:8]}..., "
          f"stream {runs['stream'][0][:8]}..., cache {runs['cache'][0][:8]}...")
    return golden


# ---------------------------------------------------------------- broken folders

BAD_BASE = dict(model_type="llama", hidden_size=32, intermediate_size=48, num_hidden_layers=1,
                num_attention_heads=2, num_key_value_heads=1, head_dim=16, vocab_size=64,
                rms_norm_eps=1e-5, rope_theta=10000.0, max_position_embeddings=128,
                tie_word_embeddings=True, bos_token_id=1, eos_token_id=2)
BAD_SEED = 404


def make_bad() -> dict:
    bad = os.path.join(OUT, "bad")
    shutil.rmtree(bad, ignore_errors=True)
    os.makedirs(bad)
    kw = dict(BAD_BASE)
    cfg = ck.make_config(kw.pop("model_type"), dtype="bf16", **kw)
    specs = ck.tensor_specs(cfg)
    cases = {}

    def write(name, c=cfg, sp=None, shards=1, write_config=True):
        d = os.path.join(bad, name)
        ck.write_checkpoint(d, c, dtype="bf16", seed=BAD_SEED, shards=shards, specs=sp,
                            write_config=write_config)
        return d

    write("no-config", write_config=False)
    cases["no-config"] = {"what": "model.safetensors only: no config.json", "mentions": "config.json"}

    write("bad-model-type", c=dict(cfg, model_type="mistral", architectures=["MistralForCausalLM"]))
    cases["bad-model-type"] = {"what": "model_type is mistral", "mentions": "mistral"}

    d = write("missing-shard", shards=2)
    os.remove(os.path.join(d, "model-00002-of-00002.safetensors"))
    cases["missing-shard"] = {"what": "the index names model-00002-of-00002.safetensors, which is absent",
                              "mentions": "model-00002-of-00002.safetensors"}

    wrong = "model.layers.0.self_attn.k_proj.weight"
    sp = [ck.TensorSpec(s.name, (24, 32), s.kind) if s.name == wrong else s for s in specs]
    write("shape-mismatch", sp=sp)
    cases["shape-mismatch"] = {"what": f"{wrong} is [24, 32]; the config says [16, 32]", "mentions": wrong}

    d = write("truncated-shard")
    path = os.path.join(d, "model.safetensors")
    with open(path, "rb") as f:
        data = f.read()
    header_end = 8 + int.from_bytes(data[:8], "little")
    with open(path, "wb") as f:
        f.write(data[:header_end + (len(data) - header_end) // 2])
    cases["truncated-shard"] = {"what": "model.safetensors holds half the bytes its header declares",
                                "mentions": "model.safetensors"}

    write("bad-rope-scaling", c=dict(cfg, rope_scaling={"factor": 4.0, "original_max_position_embeddings": 32,
                                                        "rope_type": "yarn"}))
    cases["bad-rope-scaling"] = {"what": "rope_scaling type yarn (only default, linear, llama3 are supported)",
                                 "mentions": "yarn"}

    gone = "model.layers.0.mlp.up_proj.weight"
    write("missing-tensor", sp=[s for s in specs if s.name != gone])
    cases["missing-tensor"] = {"what": f"{gone} is absent", "mentions": gone}

    more = "model.layers.1.input_layernorm.weight"
    write("extra-tensor", sp=specs + [ck.TensorSpec(more, (32,), "norm")])
    cases["extra-tensor"] = {"what": f"{more} belongs to a layer the config does not have "
                                     "(num_hidden_layers is 1)", "mentions": more}

    ck.write_json(os.path.join(bad, "cases.json"), cases)

    # Every case is refused by the reference, for the stated reason, and the
    # unbroken base loads.
    with tempfile.TemporaryDirectory() as tmp:
        ref.Model(*ref.load_folder(write_to(tmp, cfg)))
    for name, case in cases.items():
        try:
            ref.Model(*ref.load_folder(os.path.join(bad, name)))
        except Exception as e:  # noqa: BLE001 - any refusal, then its message is checked
            check(case["mentions"] in str(e), f"bad/{name} refused for its reason (got: {e})")
        else:
            check(False, f"bad/{name} is refused by the reference")
    size = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(bad) for f in fs)
    print(f"bad: {len(cases)} folders, {size / 1024:.0f} KiB")
    return cases


def write_to(tmp, cfg):
    d = os.path.join(tmp, "base")
    ck.write_checkpoint(d, cfg, dtype="bf16", seed=BAD_SEED)
    return d


def main() -> int:
    check_rounding()
    os.makedirs(OUT, exist_ok=True)
    for g in GOLDENS:
        make_golden(g)
    make_bad()
    return 0


if __name__ == "__main__":
    sys.exit(main())
