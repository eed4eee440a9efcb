"""Writes Hugging Face `llama` / `qwen2` checkpoint folders with deterministic
random weights, in plain numpy (no torch, no safetensors package).

A folder holds `config.json`, `generation_config.json` and either
`model.safetensors` or shards `model-0000i-of-0000N.safetensors` plus
`model.safetensors.index.json`, laid out as transformers writes them.

Init (chosen so tiny random models give non-degenerate attention and logits
with clear greedy margins; HF's own init, normal with std 0.02 everywhere,
gives near-uniform attention and logits within a few 1e-3 of each other):

  embed_tokens                      N(0, 0.05^2)
  q/k/v/o, gate/up/down projections N(0, 1/fan_in), fan_in = shape[1]
  lm_head (untied)                  N(0, 1/hidden_size)
  RMSNorm weights                   1 + N(0, 0.1^2)
  q/k/v biases (qwen2)              N(0, 0.5^2)

With RMS-normalised inputs this makes every q, k, v element of order 1, so
the scaled scores q.k/sqrt(head_dim) have spread about 1 and every residual
update is of order 1. The embedding is kept small: the first RMSNorm
rescales it anyway, and a residual stream led by the layers' updates rather
than by the token's own embedding stops a tied model from favouring the
token it just read (with embeddings of std 1, greedy decoding of a tied
model repeats one token forever). Untied logits have spread about 1, tied
ones about 0.05 * sqrt(hidden_size).

Values are drawn in float32 from numpy's PCG64, one generator per tensor
seeded from (seed, tensor name), so a tensor's values do not depend on which
other tensors exist, on sharding, or on the stored dtype. They are then stored
as F32, F16 (IEEE round-to-nearest-even, numpy's cast) or BF16
(round-to-nearest-even of the float32 bits). Tensors are generated and written
a block of rows at a time, so writing a 1B-parameter folder needs memory for
one block, not for the model.
"""
import hashlib
import json
import os
from dataclasses import dataclass, field
from typing import Iterator, List, Optional

import numpy as np

# dtype name (as the CLI and goldens spell it) -> (safetensors dtype, bytes, config torch_dtype)
DTYPES = {
    "f32": ("F32", 4, "float32"),
    "f16": ("F16", 2, "float16"),
    "bf16": ("BF16", 2, "bfloat16"),
}

TRANSFORMERS_VERSION = "4.45.0"

EMBED_STD = 0.05

# Elements generated per block while streaming a tensor (whole rows only).
BLOCK_ELEMENTS = 1 << 22


def make_config(model_type: str, *, hidden_size: int, intermediate_size: int,
                num_hidden_layers: int, num_attention_heads: int,
                num_key_value_heads: int, vocab_size: int, rms_norm_eps: float,
                rope_theta: float, max_position_embeddings: int,
                tie_word_embeddings: bool, bos_token_id: int, eos_token_id,
                dtype: str, head_dim: Optional[int] = None,
                rope_scaling: Optional[dict] = None) -> dict:
    """A config.json dict with the keys transformers writes for this model type.
    `head_dim` is written only when given (transformers then uses it instead of
    hidden_size // num_attention_heads)."""
    if model_type not in ("llama", "qwen2"):
        raise ValueError(f"model_type {model_type!r}: only llama and qwen2 are written")
    cfg = {
        "architectures": ["LlamaForCausalLM" if model_type == "llama" else "Qwen2ForCausalLM"],
        "attention_dropout": 0.0,
        "bos_token_id": bos_token_id,
        "eos_token_id": eos_token_id,
        "hidden_act": "silu",
        "hidden_size": hidden_size,
        "initializer_range": 0.02,
        "intermediate_size": intermediate_size,
        "max_position_embeddings": max_position_embeddings,
        "model_type": model_type,
        "num_attention_heads": num_attention_heads,
        "num_hidden_layers": num_hidden_layers,
        "num_key_value_heads": num_key_value_heads,
        "rms_norm_eps": rms_norm_eps,
        "rope_scaling": rope_scaling,
        "rope_theta": float(rope_theta),
        "tie_word_embeddings": tie_word_embeddings,
        "torch_dtype": DTYPES[dtype][2],
        "transformers_version": TRANSFORMERS_VERSION,
        "use_cache": True,
        "vocab_size": vocab_size,
    }
    if head_dim is not None:
        cfg["head_dim"] = head_dim
    if model_type == "llama":
        # Llama's q/k/v/o and MLP biases are switched off by these two flags.
        cfg["attention_bias"] = False
        cfg["mlp_bias"] = False
        cfg["pretraining_tp"] = 1
    else:
        # Qwen2 always has q/k/v biases (no flag). Sliding-window attention is
        # off in every released Qwen2/2.5 config; these keys say so.
        cfg["max_window_layers"] = num_hidden_layers
        cfg["sliding_window"] = max_position_embeddings
        cfg["use_sliding_window"] = False
    return dict(sorted(cfg.items()))


def head_dim_of(cfg: dict) -> int:
    return cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]


def generation_config_for(cfg: dict) -> dict:
    return {
        "bos_token_id": cfg["bos_token_id"],
        "do_sample": False,
        "eos_token_id": cfg["eos_token_id"],
        "transformers_version": TRANSFORMERS_VERSION,
    }


# Shapes the CLI knows. The two real ones match the published configs of
# Qwen/Qwen2.5-0.5B and meta-llama/Llama-3.2-1B; the tiny ones are the golden
# checkpoints of tools/make_hf_goldens.py (which takes them from here).
SHAPES = {
    "qwen2.5-0.5b": dict(
        model_type="qwen2", hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
        num_attention_heads=14, num_key_value_heads=2, vocab_size=151936, rms_norm_eps=1e-6,
        rope_theta=1000000.0, max_position_embeddings=32768, tie_word_embeddings=True,
        bos_token_id=151643, eos_token_id=151643),
    "llama-3.2-1b": dict(
        model_type="llama", hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
        num_attention_heads=32, num_key_value_heads=8, head_dim=64, vocab_size=128256,
        rms_norm_eps=1e-5, rope_theta=500000.0, max_position_embeddings=131072,
        tie_word_embeddings=True, bos_token_id=128000, eos_token_id=128001,
        rope_scaling={"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                      "original_max_position_embeddings": 8192, "rope_type": "llama3"}),
    # head_dim 16 = hidden/heads but written, as Llama 3.x configs do. theta
    # 1e4 with original_max_position_embeddings 32 puts the 8 frequencies in
    # all three llama3 bands (kept, smoothed, divided by factor).
    "tiny-llama-gqa": dict(
        model_type="llama", hidden_size=64, intermediate_size=96, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, vocab_size=128,
        rms_norm_eps=1e-5, rope_theta=10000.0, max_position_embeddings=256,
        tie_word_embeddings=False, bos_token_id=125, eos_token_id=[126, 127],
        rope_scaling={"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                      "original_max_position_embeddings": 32, "rope_type": "llama3"}),
    # head_dim 32 != 48 / 3; rope_scaling in the older {"type": ...} spelling.
    "tiny-llama-tied": dict(
        model_type="llama", hidden_size=48, intermediate_size=80, num_hidden_layers=2,
        num_attention_heads=3, num_key_value_heads=3, head_dim=32, vocab_size=128,
        rms_norm_eps=1e-5, rope_theta=10000.0, max_position_embeddings=256,
        tie_word_embeddings=True, bos_token_id=1, eos_token_id=2,
        rope_scaling={"factor": 2.0, "type": "linear"}),
    # The shipped demo (models/hf-demo-qwen2/, configs/hf-demo.yaml): a
    # Qwen2.5-shaped speech LM cut small enough to commit (about 1 MB in
    # bf16) and to stream many voices on two cores: a 1,024-token codec
    # vocabulary, GQA with biases, tied embeddings.
    "demo-qwen2": dict(
        model_type="qwen2", hidden_size=128, intermediate_size=192, num_hidden_layers=3,
        num_attention_heads=4, num_key_value_heads=2, vocab_size=1024, rms_norm_eps=1e-6,
        rope_theta=1000000.0, max_position_embeddings=4096, tie_word_embeddings=True,
        bos_token_id=1021, eos_token_id=1023),
    "tiny-qwen2-bias": dict(
        model_type="qwen2", hidden_size=48, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=6, num_key_value_heads=2, vocab_size=144, rms_norm_eps=1e-6,
        rope_theta=1000000.0, max_position_embeddings=256, tie_word_embeddings=True,
        bos_token_id=140, eos_token_id=141),
}


def shape_config(shape: str, dtype: str, **overrides) -> dict:
    kw = dict(SHAPES[shape])
    kw.update(overrides)
    return make_config(kw.pop("model_type"), dtype=dtype, **kw)


@dataclass
class TensorSpec:
    name: str
    shape: tuple
    kind: str  # embed | proj | lm_head | norm | bias
    # Explicit float32 values (e.g. a copy of another tensor); None = generate.
    values: Optional[np.ndarray] = field(default=None, repr=False)


def tensor_specs(cfg: dict) -> List[TensorSpec]:
    """Every tensor of the checkpoint, in the order transformers' state_dict
    lists them (which is the order shards are filled in)."""
    H = cfg["hidden_size"]
    I = cfg["intermediate_size"]
    D = head_dim_of(cfg)
    Hq, Hkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    qwen2 = cfg["model_type"] == "qwen2"
    specs = [TensorSpec("model.embed_tokens.weight", (cfg["vocab_size"], H), "embed")]
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        for proj, out in (("q", Hq * D), ("k", Hkv * D), ("v", Hkv * D)):
            specs.append(TensorSpec(f"{p}self_attn.{proj}_proj.weight", (out, H), "proj"))
            if qwen2:
                specs.append(TensorSpec(f"{p}self_attn.{proj}_proj.bias", (out,), "bias"))
        specs.append(TensorSpec(f"{p}self_attn.o_proj.weight", (H, Hq * D), "proj"))
        specs.append(TensorSpec(f"{p}mlp.gate_proj.weight", (I, H), "proj"))
        specs.append(TensorSpec(f"{p}mlp.up_proj.weight", (I, H), "proj"))
        specs.append(TensorSpec(f"{p}mlp.down_proj.weight", (H, I), "proj"))
        specs.append(TensorSpec(f"{p}input_layernorm.weight", (H,), "norm"))
        specs.append(TensorSpec(f"{p}post_attention_layernorm.weight", (H,), "norm"))
    specs.append(TensorSpec("model.norm.weight", (H,), "norm"))
    if not cfg["tie_word_embeddings"]:
        specs.append(TensorSpec("lm_head.weight", (cfg["vocab_size"], H), "lm_head"))
    return specs


def _rng(seed: int, name: str) -> np.random.Generator:
    # One stream per (seed, name): hashing the name keeps a tensor's values
    # independent of the other tensors and of the order they are written in.
    digest = hashlib.sha256(f"{seed}:{name}".encode()).digest()
    return np.random.Generator(np.random.PCG64(int.from_bytes(digest[:16], "little")))


def iter_values(spec: TensorSpec, seed: int) -> Iterator[np.ndarray]:
    """The tensor's float32 values, flattened, in blocks of whole rows."""
    n = int(np.prod(spec.shape))
    if spec.values is not None:
        v = np.ascontiguousarray(spec.values, dtype=np.float32).reshape(-1)
        assert v.size == n, spec.name
        yield v
        return
    row = spec.shape[-1] if len(spec.shape) > 1 else n
    block = max(row, BLOCK_ELEMENTS // row * row)
    rng = _rng(seed, spec.name)
    if spec.kind == "embed":
        std, mean = EMBED_STD, 0.0
    elif spec.kind == "proj":
        std, mean = 1.0 / np.sqrt(spec.shape[1]), 0.0
    elif spec.kind == "lm_head":
        std, mean = 1.0 / np.sqrt(spec.shape[1]), 0.0
    elif spec.kind == "norm":
        std, mean = 0.1, 1.0
    elif spec.kind == "bias":
        std, mean = 0.5, 0.0
    else:
        raise ValueError(spec.kind)
    std, mean = np.float32(std), np.float32(mean)
    done = 0
    while done < n:
        m = min(block, n - done)
        x = rng.standard_normal(m, dtype=np.float32)
        x *= std
        x += mean
        yield x
        done += m


def tensor_values(spec: TensorSpec, seed: int) -> np.ndarray:
    """The whole tensor as float32 (before rounding to the stored dtype)."""
    return np.concatenate(list(iter_values(spec, seed))).reshape(spec.shape)


def round_bf16_bits(x: np.ndarray) -> np.ndarray:
    """bfloat16 bit patterns of float32 values, round-to-nearest-even on the
    float32 bits (what torch's .to(torch.bfloat16) does). NaN stays NaN."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    # Adding 0x7FFF plus the lowest kept bit, then truncating, rounds to
    # nearest with ties to the even pattern; finite values cannot overflow
    # uint32 (the largest finite float32 bits + 0x8000 < 2^32).
    r = ((u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)).astype(np.uint16)
    nan = np.isnan(x)
    if nan.any():
        r[nan] = ((u[nan] >> np.uint32(16)) | np.uint32(0x40)).astype(np.uint16)
    return r


def encode(x: np.ndarray, dtype: str) -> bytes:
    st = DTYPES[dtype][0]
    if st == "F32":
        return np.asarray(x, dtype="<f4").tobytes()
    if st == "F16":
        return np.asarray(x, dtype=np.float32).astype("<f2").tobytes()
    return round_bf16_bits(x).astype("<u2").tobytes()


def write_safetensors(path: str, specs: List[TensorSpec], dtype: str, seed: int) -> int:
    """Writes one safetensors file: u64 little-endian header length, the JSON
    header (compact, space-padded to a multiple of 8 as the reference
    implementation does), then the tensors' bytes, in name order like the
    safetensors library. Returns the data size in bytes."""
    st, size, _ = DTYPES[dtype]
    ordered = sorted(specs, key=lambda s: s.name)
    header = {"__metadata__": {"format": "pt"}}
    offset = 0
    for s in ordered:
        nbytes = int(np.prod(s.shape)) * size
        header[s.name] = {"dtype": st, "shape": list(s.shape), "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for s in ordered:
            for block in iter_values(s, seed):
                f.write(encode(block, dtype))
    return offset


def shard_groups(specs: List[TensorSpec], dtype: str, shards: int) -> List[List[TensorSpec]]:
    """Splits the state_dict-ordered tensors into `shards` contiguous groups of
    about equal bytes (transformers also fills shards in state_dict order)."""
    size = DTYPES[dtype][1]
    nbytes = [int(np.prod(s.shape)) * size for s in specs]
    if shards < 1 or shards > len(specs):
        raise ValueError(f"cannot split {len(specs)} tensors into {shards} shards")
    total = sum(nbytes)
    groups, cur, acc = [], [], 0
    for i, (s, b) in enumerate(zip(specs, nbytes)):
        cur.append(s)
        acc += b
        left_tensors = len(specs) - i - 1
        left_groups = shards - len(groups) - 1
        # Close the group once it reaches its share of the bytes, but keep one
        # tensor for every group still to fill.
        if left_groups > 0 and (acc >= total * (len(groups) + 1) / shards or left_tensors == left_groups):
            groups.append(cur)
            cur = []
    groups.append(cur)
    assert len(groups) == shards and all(groups)
    return groups


def write_json(path: str, obj) -> None:
    with open(path, "w") as f:
        f.write(json.dumps(obj, indent=2, sort_keys=True) + "\n")


def write_checkpoint(out_dir: str, cfg: dict, *, dtype: str, seed: int, shards: int = 1,
                     specs: Optional[List[TensorSpec]] = None,
                     generation_config: Optional[dict] = None,
                     write_config: bool = True) -> dict:
    """Writes a whole folder. `specs` overrides the tensor list (used to build
    broken folders). Returns {file name: [tensor names]}."""
    os.makedirs(out_dir, exist_ok=True)
    if specs is None:
        specs = tensor_specs(cfg)
    if write_config:
        write_json(os.path.join(out_dir, "config.json"), cfg)
        write_json(os.path.join(out_dir, "generation_config.json"),
                   generation_config if generation_config is not None else generation_config_for(cfg))
    if shards == 1:
        write_safetensors(os.path.join(out_dir, "model.safetensors"), specs, dtype, seed)
        return {"model.safetensors": [s.name for s in specs]}
    files = {}
    weight_map = {}
    total = 0
    for i, group in enumerate(shard_groups(specs, dtype, shards)):
        name = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        total += write_safetensors(os.path.join(out_dir, name), group, dtype, seed)
        files[name] = [s.name for s in group]
        for s in group:
            weight_map[s.name] = name
    write_json(os.path.join(out_dir, "model.safetensors.index.json"),
               {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))})
    return files
