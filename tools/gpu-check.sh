#!/usr/bin/env bash
# tools/gpu-check.sh [--prebuilt DIR] [REPORT_DIR]
#
# Everything mstar checks on a GPU, in one run from a clean clone on a fresh
# Debian/Ubuntu machine with the CUDA toolkit at its standard prefix
# (/usr/local/cuda) and a visible NVIDIA GPU:
#   1. the Debian packages (tools/install-deps.sh), then a Release build with
#      the CUDA backend required (-DMSTAR_CUDA=ON) on every core; a failed
#      configure or build stops here, saying so. With --prebuilt DIR (a
#      machine that cannot install packages), the binaries come from DIR
#      instead, as tools/gpu-bundle.sh lays them out: DIR/bin holds
#      mstar_backend_tests, mstar-bench and mstar-run, DIR/lib the shared
#      libraries they need that such a machine lacks;
#   2. the GPU tests (mstar_backend_tests --backend cuda: every op on CUDA
#      against the reference, the demos end to end against the cpu backend);
#   3. mstar-bench memory --backend cuda: the device's copy and triad bandwidth;
#   4. mstar-bench kernels --backend cuda on decode shapes (head dim 128,
#      32/8 heads, 64 rows, 4096 and 16384 entries, and one row of 16384, bf16)
#      and the ring at the Waypoint-1.5 720p shape (512 tokens a frame, 32/16
#      heads, D 64, 16 frames of history, bf16), against the measured copy
#      bandwidth;
#   5. mstar-run configs/tts-demo.yaml on cuda (the shipped workload);
#   6. mstar-run configs/waypoint-720p.yaml on cuda, one rollout of 8 frames;
#   7. mstar-run configs/hf-demo.yaml on cuda, when that file exists;
#   8. a random checkpoint of Qwen2.5-0.5B's shapes (bf16, written by
#      tools/hf/make-checkpoint.py with python3 and numpy), through
#      mstar-bench checkpoint on cuda: load, aggregate decode at 1, 16 and 64
#      streams, decode at depth 4096 (window 4092 + 4 sinks), 512-token prefill.
# Then one summary table: each check ok or failed, with its headline figures.
# The full log and every raw output go to REPORT_DIR (default
# build/gpu/report). Exit status: 0 when every check passed, 1 otherwise.
# Meant to finish within 8 minutes on one H200, the build included.
set -uo pipefail

cd "$(dirname "$0")/.."
root=$(pwd)
prebuilt=""
if [ "${1:-}" = "--prebuilt" ]; then
  prebuilt=$(cd "$2" && pwd) || exit 2
  shift 2
fi
report=${1:-build/gpu/report}
mkdir -p "$report"
report=$(cd "$report" && pwd)
log="$report/gpu-check.log"
: >"$log"
exec > >(tee -a "$log") 2>&1

start=$(date +%s)
elapsed() { echo $(($(date +%s) - start)); }
step() { printf '\n== %s (at %s s)\n' "$*" "$(elapsed)"; }

checks=() results=() figures=()
record() {  # name, ok|failed, figures
  checks+=("$1") results+=("$2") figures+=("$3")
  printf -- '-> %s: %s %s\n' "$1" "$2" "$3"
}

summary() {
  {
    printf '\n== gpu-check summary (%s s, report in %s)\n\n' "$(elapsed)" "$report"
    printf '| %-28s | %-6s | %s\n' "check" "result" "figures"
    printf '|%s|%s|%s\n' "------------------------------" "--------" "----------------------------------------"
    local i
    for i in "${!checks[@]}"; do printf '| %-28s | %-6s | %s\n' "${checks[$i]}" "${results[$i]}" "${figures[$i]}"; done
  } | tee "$report/summary.txt"
}

# ---------------------------------------------------------------- the machine
step "machine"
{
  echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)"
  uname -a
  nproc
  command -v nvidia-smi >/dev/null && nvidia-smi
  if command -v nvcc >/dev/null; then nvcc --version; elif [ -x /usr/local/cuda/bin/nvcc ]; then /usr/local/cuda/bin/nvcc --version; fi
} 2>&1 | tee "$report/machine.txt"

# ---------------------------------------------------------------- 1. build
if [ -n "$prebuilt" ]; then
  step "prebuilt binaries ($prebuilt)"
  export LD_LIBRARY_PATH="$prebuilt/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  ls -la "$prebuilt/bin"
  bin=$prebuilt/bin
  tests=$prebuilt/bin
  record "build" ok "prebuilt"
else
  step "packages (tools/install-deps.sh)"
  if ! tools/install-deps.sh; then
    echo "gpu-check: STOPPED: tools/install-deps.sh failed (see above)."
    record "packages" failed "tools/install-deps.sh failed"
    summary
    exit 1
  fi
  cmake --version | head -1

  step "configure (Release, MSTAR_CUDA=ON)"
  # --threads 0: nvcc compiles a file's three targets (sm_80, sm_90, PTX) in parallel.
  if ! cmake -S . -B build/gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DMSTAR_CUDA=ON "-DCMAKE_CUDA_FLAGS=--threads 0"; then
    echo "gpu-check: STOPPED: the configure failed (see above; MSTAR_CUDA=ON needs nvcc on PATH, in CUDACXX or at /usr/local/cuda/bin/nvcc)."
    record "configure" failed "cmake -S . -B build/gpu failed"
    summary
    exit 1
  fi

  step "build (-j$(nproc))"
  build_start=$(date +%s)
  if ! cmake --build build/gpu -j"$(nproc)"; then
    echo "gpu-check: STOPPED: the build failed (the first error is above; the full log is $log)."
    record "build" failed "cmake --build build/gpu failed"
    summary
    exit 1
  fi
  record "build" ok "$(($(date +%s) - build_start)) s on $(nproc) cores"

bin=build/gpu/apps
tests=build/gpu/tests
fi
# Runs a command with a time limit, its output to a file; returns its status.
run_to() {  # file, seconds, command...
  local out=$1 limit=$2
  shift 2
  echo "\$ $*  > ${out#"$root"/}"
  timeout "$limit" "$@" >"$out" 2>"$out.stderr"
  local rc=$?
  [ $rc -eq 124 ] && echo "   (stopped after $limit s)"
  tail -n 5 "$out.stderr"
  return $rc
}

# ---------------------------------------------------------------- 2. GPU tests
step "GPU tests (mstar_backend_tests --backend cuda)"
"$tests/mstar_backend_tests" --backend cuda --duration=true >"$report/cuda-tests.txt" 2>&1
rc=$?
tail -n 25 "$report/cuda-tests.txt"
counts=$(grep -E '^\[doctest\] test cases:' "$report/cuda-tests.txt" | tail -1 | sed 's/^\[doctest\] //; s/ *| */, /g')
if [ $rc -eq 0 ]; then
  record "GPU tests" ok "$counts"
elif [ $rc -eq 77 ]; then
  record "GPU tests" failed "skipped: $(head -1 "$report/cuda-tests.txt")"
else
  record "GPU tests" failed "exit $rc; $counts (failures in cuda-tests.txt)"
fi

# ---------------------------------------------------------------- 3. memory
step "device bandwidth (mstar-bench memory --backend cuda)"
copy_gbs=""
if run_to "$report/memory.json" 120 "$bin/mstar-bench" memory --backend cuda --mib 1024 --repeats 10 --json; then
  read -r copy_gbs triad_gbs dev_name < <(python3 - "$report/memory.json" <<'EOF'
import json, sys
row = json.load(open(sys.argv[1]))[0]
print(f"{row['copy_gbs']:.0f} {row['triad_gbs']:.0f} {row['device'].replace(' ', '_')}")
EOF
  )
  cat "$report/memory.json"
  record "memory (cuda)" ok "copy ${copy_gbs} GB/s, triad ${triad_gbs} GB/s (${dev_name})"
else
  record "memory (cuda)" failed "see memory.json.stderr"
fi

# ---------------------------------------------------------------- 4. kernels
step "kernels (mstar-bench kernels --backend cuda)"
cat >"$report/kernels-sweep.yaml" <<'EOF'
# Decode: one query token per row; 32 query heads over 8 KV heads, head dim 128.
# Ring: the Waypoint-1.5 720p layer shape, 16 frames of 512 tokens visible.
shapes:
  - {kind: decode, head_dim: 128, q_heads: 32, kv_heads: 8, kv_len: 4096, q_tokens: 1, batch: 64, dtype: bf16}
  - {kind: decode, head_dim: 128, q_heads: 32, kv_heads: 8, kv_len: 16384, q_tokens: 1, batch: 64, dtype: bf16}
  - {kind: decode, head_dim: 128, q_heads: 32, kv_heads: 8, kv_len: 16384, q_tokens: 1, batch: 1, dtype: bf16}
  - {kind: ring, head_dim: 64, q_heads: 32, kv_heads: 16, kv_len: 8192, q_tokens: 512, batch: 1, dtype: bf16}
EOF
bw_arg=()
[ -n "$copy_gbs" ] && bw_arg=(--bandwidth "$copy_gbs")
# Hot only: each decode pool (1 to 4 GiB) is far beyond the GPU's L2 already.
if run_to "$report/kernels.json" 240 "$bin/mstar-bench" kernels --backend cuda --sweep "$report/kernels-sweep.yaml" \
  --cache hot --repeats 20 "${bw_arg[@]}" --json; then
  kfig=$(python3 - "$report/kernels.json" <<'EOF'
import json, sys
parts = []
for r in json.load(open(sys.argv[1])):
    if r["kind"] == "ring":
        parts.append(f"ring {r['median_us']:.0f} us {r['gflops'] / 1000:.1f} TFLOP/s")
    else:
        parts.append(f"decode b{r['batch']} {r['kv_len']}: {r['median_us']:.0f} us {r['gbs']:.0f} GB/s ({r['of_bandwidth']:.2f})")
print("; ".join(parts))
EOF
  )
  python3 - "$report/kernels.json" <<'EOF'
import json, sys
for r in json.load(open(sys.argv[1])):
    print({k: r[k] for k in ("kind", "batch", "kv_len", "q_tokens", "median_us", "min_us", "max_us", "gbs", "of_bandwidth", "gflops")})
EOF
  record "kernels (cuda)" ok "$kfig"
else
  record "kernels (cuda)" failed "see kernels.json.stderr"
fi

# ---------------------------------------------------------------- 5-7. runs
# The stats line (the last of --json) as figures; fails on any error event.
run_figures() {  # events.jsonl
  python3 - "$1" <<'EOF'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
errors = [l for l in lines if l.get("event") == "error"]
stats = [l for l in lines if l.get("event") == "stats"]
if not stats:
    print("no stats line"); sys.exit(1)
s = stats[-1]
r = s["requests"]
print(f"{s['produced']} {s['unit']} in {s['seconds']:.2f} s ({s['per_second']:.1f}/s), step p50 {s['step_ms']['p50']:.2f} ms, "
      f"{r['done']} done, {r['failed']} failed, {len(errors)} error events")
sys.exit(1 if errors or r["failed"] else 0)
EOF
}

run_demo() {  # name, file stem, seconds, mstar-run arguments...
  local name=$1 stem=$2 limit=$3
  shift 3
  step "$name"
  if run_to "$report/$stem.jsonl" "$limit" "$bin/mstar-run" "$@" --set backend=cuda --json; then
    local fig
    if fig=$(run_figures "$report/$stem.jsonl"); then record "$name" ok "$fig"; else record "$name" failed "$fig"; fi
  else
    record "$name" failed "exit $? (see $stem.jsonl.stderr)"
  fi
}

run_demo "tts demo (cuda)" tts-demo 180 configs/tts-demo.yaml
run_demo "waypoint 720p (cuda)" waypoint-720p 240 configs/waypoint-720p.yaml \
  --set workload.requests.count=1 --set workload.requests.frames=8
# The Hugging Face checkpoint demo, once it ships.
if [ -f configs/hf-demo.yaml ]; then
  run_demo "hf demo (cuda)" hf-demo 240 configs/hf-demo.yaml
fi

# ---------------------------------------------------------------- 8. checkpoint
step "Qwen2.5-0.5B-shaped checkpoint (cuda)"
ckpt=${TMPDIR:-/tmp}/mstar-gpu-check-qwen2.5-0.5b
if ! python3 -c 'import numpy' 2>/dev/null; then
  record "checkpoint (cuda)" failed "python3 has no numpy to write the checkpoint"
elif ! run_to "$report/checkpoint-make.txt" 120 python3 tools/hf/make-checkpoint.py --shape qwen2.5-0.5b --dtype bf16 "$ckpt"; then
  record "checkpoint (cuda)" failed "make-checkpoint.py failed (see checkpoint-make.txt.stderr)"
elif run_to "$report/checkpoint.txt" 240 "$bin/mstar-bench" checkpoint "$ckpt" --kind qwen2 --backend cuda \
  --streams 1,16,64 --tokens 64 --window 4092 --depths 4096 --probe 16 --prefill 512; then
  cat "$report/checkpoint.txt"
  record "checkpoint (cuda)" ok "see checkpoint.txt"
else
  record "checkpoint (cuda)" failed "see checkpoint.txt.stderr"
fi

summary
for r in "${results[@]}"; do [ "$r" = ok ] || exit 1; done
exit 0
