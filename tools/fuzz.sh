#!/usr/bin/env bash
# Runs mstar's libFuzzer harnesses (fuzz/) over corpora seeded from the
# tree's own inputs (tests/data, the shipped configs and models, fuzz/data).
#
#   tools/fuzz.sh --ci              every harness for 20 s (what .ci/run does)
#   tools/fuzz.sh HOURS             every harness for HOURS / 10 hours, in turn
#   tools/fuzz.sh --seconds N [--only NAME]...   every (or the named) harness for N s
#
# Builds what it runs with the fuzz preset first: the harnesses and mstar-run
# (clang 14; tools/install-deps.sh installs it).
# Corpora grow in build/fuzz/corpus/NAME across runs; a crash, leak, timeout
# or sanitizer report leaves its input in build/fuzz/artifacts/ and fails the
# run (exit 1). Every run appends its executions to build/fuzz/executions.tsv
# (date, harness, seconds, executions, result), whose totals per harness
# docs/reliability.md records.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=20
only=()
case "${1:-}" in
  --ci) shift ;;
  --seconds) seconds="$2"; shift 2 ;;
  ''|-h|--help) sed -n '2,15p' "$0"; exit 2 ;;
  *) seconds=$(awk -v h="$1" 'BEGIN { printf "%d", h * 3600 / 10 }'); shift ;;
esac
while [ $# -gt 0 ]; do
  case "$1" in
    --only) only+=("$2"); shift 2 ;;
    *) echo "fuzz.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

harnesses=(fuzz_deployment fuzz_manifest fuzz_set fuzz_requests fuzz_safetensors fuzz_shard_index fuzz_hf_config
           fuzz_gguf fuzz_tokenizer fuzz_replay fuzz_snapshot)
[ ${#only[@]} -gt 0 ] && harnesses=("${only[@]}")

cmake --preset fuzz >/dev/null
# Only what this script runs: the harnesses, and mstar-run for the snapshot
# seeds (the other programs and libraries would only cost CI time).
cmake --build --preset fuzz --target "${harnesses[@]}" mstar-run

root=build/fuzz
bin=$root/fuzz
mkdir -p "$root/artifacts" "$root/seeds" "$root/corpus"

# Seeds: copied fresh each run from the tree, so a clean clone fuzzes from
# the same start; the corpus directory keeps what the fuzzer found.
seed() {  # seed NAME FILE [PREFIX]: FILE as a seed of NAME, after PREFIX (a byte the harness reads first)
  local dir="$root/seeds/$1" out
  mkdir -p "$dir"
  out="$dir/$(printf '%s' "${3:-}$2" | md5sum | cut -c1-16)"
  if [ -n "${3:-}" ]; then { printf "$3"; cat "$2"; } >"$out"; else cp "$2" "$out"; fi
}
rm -rf "$root/seeds"
for f in configs/*.yaml fuzz/data/fuzz-speech.yaml fuzz/data/fuzz-frames.yaml; do seed fuzz_deployment "$f"; done
for f in models/*.yaml fuzz/data/fuzz-tts.yaml fuzz/data/fuzz-world.yaml; do seed fuzz_manifest "$f"; done
sets=$(mktemp -d)
printf 'resources.voice_kv.max_slots=4\nworkload.requests.count=2\nworkload.voices.bob={file: /dev/null}\n' >"$sets/a"
printf 'resources.world_kv.num_sessions=2\nworkload.requests.frames=3\nscheduler.max_batch=1\n' >"$sets/b"
printf 'kv_dtype=f16\nthreads=3\nworkload.requests.sampling={temperature: 0.5, top_k: 3}\n' >"$sets/c"
seed fuzz_set "$sets/a" '\000'; seed fuzz_set "$sets/b" '\001'; seed fuzz_set "$sets/c" '\002'
rm -rf "$sets"
for f in fuzz/data/requests-speech.jsonl tests/data/requests/tts.jsonl; do seed fuzz_requests "$f" '\000'; done
seed fuzz_requests fuzz/data/requests-frames.jsonl '\001'
for f in $(find tests/data/hf -name '*.safetensors' -size -32k); do seed fuzz_safetensors "$f"; done
for f in $(find tests/data/hf -name '*.index.json'); do seed fuzz_shard_index "$f"; done
for f in $(find tests/data/hf models/hf-demo-qwen2 -name config.json); do seed fuzz_hf_config "$f" '\000'; seed fuzz_hf_config "$f" '\002'; done
for f in $(find tests/data/hf models/hf-demo-qwen2 -name generation_config.json); do seed fuzz_hf_config "$f" '\001'; done
# GGUF seeds from the independent converter: the small goldens, f32 and
# quantised, each for both families (the first byte picks llama or qwen2).
ggufs=$(mktemp -d)
for d in llama-tied-f32 qwen2-bias-bf16; do
  for t in f32 q8_0; do
    python3 tools/hf_to_gguf.py "tests/data/hf/$d" "$ggufs/$d-$t.gguf" --outtype "$t" >/dev/null
    seed fuzz_gguf "$ggufs/$d-$t.gguf" '\000'
    seed fuzz_gguf "$ggufs/$d-$t.gguf" '\001'
  done
done
rm -rf "$ggufs"
for f in fuzz/data/tokenizer-*.json tests/data/tokenizer/broken/tokenizer.json; do seed fuzz_tokenizer "$f"; done
for f in tests/data/*.json; do seed fuzz_replay "$f"; done
# Snapshot seeds: streams saved by mstar-run from the fuzz deployments.
snaps=$(mktemp -d)
for kind in speech frames; do
  lines=fuzz/data/snapshot-seeds.jsonl
  [ $kind = frames ] && lines=fuzz/data/snapshot-seeds-frames.jsonl
  sed "s#SEEDS#$snaps#g" "$lines" >"$snaps/$kind.jsonl"
  "$root/apps/mstar-run" "fuzz/data/fuzz-$kind.yaml" --requests "$snaps/$kind.jsonl" --out "$snaps/$kind.events"
done
for f in "$snaps"/speech-*.snap; do seed fuzz_snapshot "$f" '\000'; seed fuzz_snapshot "$f" '\002'; done
for f in "$snaps"/frames-*.snap; do seed fuzz_snapshot "$f" '\001'; seed fuzz_snapshot "$f" '\003'; done
rm -rf "$snaps"
# Inputs that found a defect, kept as seeds so every run replays them first
# (each already starts with the byte the harness reads; docs/reliability.md).
for f in fuzz/data/snapshot-*.bin; do seed fuzz_snapshot "$f"; done

dict_of() {
  case "$1" in
    fuzz_deployment|fuzz_manifest|fuzz_set) echo fuzz/dict/yaml.dict ;;
    *) echo fuzz/dict/json.dict ;;
  esac
}

record="$root/executions.tsv"
[ -f "$record" ] || printf 'date\tharness\tseconds\texecutions\tresult\n' >"$record"
failed=0
summary=""
for h in "${harnesses[@]}"; do
  mkdir -p "$root/corpus/$h"
  log="$root/$h.log"
  set +e
  # stdin is /dev/null: a harness never waits on a terminal. ASan's
  # quarantine of freed memory is cut from 256 to 16 MiB: at 256 the
  # tokenizer harness's resident memory grew with every input (to 489 MiB in
  # 53k inputs, past the 2.5 GiB limit in 135k, while its live heap stayed
  # at 28 MiB; flat at 55 MiB with no quarantine), an out-of-memory report
  # about the sanitizer rather than about mstar. 16 MiB still holds the most
  # recent frees, where a use after free is caught.
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=16" \
  "$bin/$h" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=2560 -max_len=65536 -print_final_stats=1 \
    -dict="$(dict_of "$h")" -artifact_prefix="$root/artifacts/$h-" "$root/corpus/$h" "$root/seeds/$h" \
    </dev/null >"$log" 2>&1
  rc=$?
  set -e
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  runs=${runs:-0}
  result=ok
  if [ $rc -ne 0 ]; then
    result="FAILED (exit $rc)"
    failed=$((failed + 1))
    echo "fuzz: $h failed; the end of $log:" >&2
    tail -40 "$log" >&2
  fi
  printf '%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$h" "$seconds" "$runs" "$result" >>"$record"
  summary+=$(printf '%-18s %8s s %12s executions  %s' "$h" "$seconds" "$runs" "$result")$'\n'
done

echo
echo "fuzz: ${#harnesses[@]} harnesses, $seconds s each"
printf '%s' "$summary"
echo "fuzz: executions recorded so far (build/fuzz/executions.tsv):"
awk -F'\t' 'NR > 1 { n[$2] += $4 } END { for (h in n) printf "  %-18s %12d\n", h, n[h] }' "$record" | sort
if [ $failed -gt 0 ]; then
  echo "fuzz: $failed of ${#harnesses[@]} harnesses FAILED" >&2
  exit 1
fi
echo "fuzz: all ${#harnesses[@]} harnesses clean"
