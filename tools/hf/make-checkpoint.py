#!/usr/bin/python3
"""Writes a Hugging Face checkpoint folder with deterministic random weights
(init documented in checkpoint.py), for loader tests and benchmarks.

  tools/hf/make-checkpoint.py --shape llama-3.2-1b --dtype bf16 OUT_DIR
  tools/hf/make-checkpoint.py --shape qwen2.5-0.5b --dtype bf16 --shards 2 OUT_DIR

Shapes: qwen2.5-0.5b, llama-3.2-1b (the published configs' dimensions) and
the tiny golden shapes (tiny-llama-gqa, tiny-llama-tied, tiny-qwen2-bias).
Tensors are streamed a block at a time, so memory stays small whatever the
shape. Same arguments, same bytes.
"""
import argparse
import os
import sys
import time

sys.dont_write_bytecode = True  # keep the source tree free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checkpoint  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", required=True, choices=sorted(checkpoint.SHAPES))
    ap.add_argument("--dtype", default="bf16", choices=sorted(checkpoint.DTYPES))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shards", type=int, default=1, help="number of safetensors files (>1 writes an index)")
    ap.add_argument("out_dir")
    a = ap.parse_args()

    cfg = checkpoint.shape_config(a.shape, a.dtype)
    specs = checkpoint.tensor_specs(cfg)
    params = sum(int(checkpoint.np.prod(s.shape)) for s in specs)
    t0 = time.monotonic()
    files = checkpoint.write_checkpoint(a.out_dir, cfg, dtype=a.dtype, seed=a.seed, shards=a.shards)
    dt = time.monotonic() - t0
    size = sum(os.path.getsize(os.path.join(a.out_dir, f)) for f in files)
    print(f"{a.out_dir}: {a.shape} {a.dtype}, {params:,} parameters, {len(files)} file(s), "
          f"{size / 2**20:.1f} MiB in {dt:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
