#!/usr/bin/env bash
# tools/bench/run.sh [BUILD_DIR [OUT_FILE]] [--rows NAME,...] [--quick]
#                    [--peer-bin DIR] [--checkpoint DIR] [--shape NAME] [--list]
#
# Runs the command behind each row of docs/PERFORMANCE.md's "Today's
# figures" with its --json output and appends one line per row to OUT_FILE
# (default docs/bench/results.jsonl):
#   {"row": NAME, "command": "...", "date": "...", "result": <its JSON>}
# (several tables in one output become a list). A row that cannot run here
# is written with "skipped" (the reason) and "result": null and said on
# stderr; a command that fails is written with "error" and makes the script
# exit 1 once every row has run.
#
#   BUILD_DIR        a Release build (default build/release); nothing is built
#   --rows A,B       only these rows (default: every row, in the order below)
#   --quick          small sizes and few repeats where the bench has them:
#                    a smoke test, not the table's figures
#   --peer-bin DIR   llama.cpp's build/bin for the peer-* rows (default
#                    $MSTAR_PEER_BIN; docs/peer-llama-cpp.md); without it
#                    those rows are skipped
#   --checkpoint DIR the checkpoint of the checkpoint and peer rows (default
#                    BUILD_DIR/bench/SHAPE-bf16), made once with
#                    tools/hf/make-checkpoint.py --dtype bf16 where DIR holds
#                    no config.json (numpy; about 1 GB for the default shape)
#   --shape NAME     its make-checkpoint.py shape (default qwen2.5-0.5b; a
#                    tiny one, e.g. tiny-qwen2-bias, for a quick smoke test)
#   --list           print each selected row's command and run nothing
#
# Rows: memory matmul attention sample roofline roofline-bf16 busy streams
# streams-f32 prefill prefill-f32 tts-demo world-demo stream serve
# peer-attention peer-decode peer-deep.
# Run it on an otherwise idle machine: docs/PERFORMANCE.md, "Method".
set -euo pipefail

orig=$PWD
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
rel() { case "$1" in /*) printf '%s' "$1" ;; *) realpath -m --relative-to="$root" "$orig/$1" ;; esac; }
die() { echo "run.sh: $*" >&2; exit 2; }

all_rows=(memory matmul attention sample roofline roofline-bf16 busy streams streams-f32 prefill prefill-f32
          tts-demo world-demo stream serve peer-attention peer-decode peer-deep)
build=build/release
out=docs/bench/results.jsonl
rows=""
quick=0
list=0
peer_bin=${MSTAR_PEER_BIN:-}
ckpt=""
shape=qwen2.5-0.5b
positional=0
while [ $# -gt 0 ]; do
  case "$1" in
    --rows|--peer-bin|--checkpoint|--shape)
      [ $# -ge 2 ] || die "$1 needs a value"
      case "$1" in
        --rows) rows="$2" ;;
        --peer-bin) peer_bin=$(rel "$2") ;;
        --checkpoint) ckpt=$(rel "$2") ;;
        --shape) shape="$2" ;;
      esac
      shift 2 ;;
    --quick) quick=1; shift ;;
    --list) list=1; shift ;;
    -h|--help) sed -n '2,32p' "$0"; exit 0 ;;
    -*) die "unknown option '$1' (--help lists them)" ;;
    *)
      case $positional in
        0) build=$(rel "$1") ;;
        1) out=$(rel "$1") ;;
        *) die "too many arguments: '$1'" ;;
      esac
      positional=$((positional + 1)); shift ;;
  esac
done

selected=()
if [ -z "$rows" ]; then
  selected=("${all_rows[@]}")
else
  IFS=',' read -r -a selected <<<"$rows"
  for r in "${selected[@]}"; do
    case " ${all_rows[*]} " in *" $r "*) ;; *) die "unknown row '$r' (rows: ${all_rows[*]})" ;; esac
  done
fi

bench="$build/apps/mstar-bench"
serve_load="$build/apps/mstar-serve-load"
[ -n "$ckpt" ] || ckpt="$build/bench/$shape-bf16"
case "$shape" in *llama*) kind=llama ;; *) kind=qwen2 ;; esac

# Full sizes are those the table's figures were measured with; --quick
# shrinks what the bench lets shrink.
if [ "$quick" = 1 ]; then
  mem=(--mib 64 --repeats 2); mm_repeats=5; attn_repeats=5; sample_repeats=20; pairs=3
  sweep=(--tokens 8 --rounds 1); prompt=64
  tts=(--repeats 1 --streams 1,4 --tokens 16); world=(--repeats 1 --streams 1 --tokens 2)
  lengths=1024,4096; probe=4; serve_repeats=1
  peer_rounds=1; kv_lens=512; depths=4096; gen=16
else
  mem=(); mm_repeats=100; attn_repeats=20; sample_repeats=200; pairs=20
  sweep=(--tokens 32 --rounds 3); prompt=512
  tts=(--repeats 3 --streams 1,4,16,32 --tokens 128); world=(--repeats 2 --streams 1,2,3 --tokens 8)
  lengths=1024,4096,16384,65536; probe=8; serve_repeats=5
  peer_rounds=5; kv_lens=512,4096,16384; depths=4096,16384; gen=64
fi

# define_row NAME: sets cmd (the command), skip (why it cannot run here, or
# empty) and needs_ckpt (1 when it reads the checkpoint).
define_row() {
  cmd=(); skip=""; needs_ckpt=0
  local ck=("$bench" checkpoint "$ckpt" --kind "$kind" --threads 2)
  local peer=(python3 tools/peer_compare.py --peer-bin "$peer_bin" --mstar-bench "$bench" --threads 2 --json)
  case "$1" in
    memory) cmd=("$bench" memory --threads 2 "${mem[@]}") ;;
    matmul) cmd=("$bench" matmul --rows 1,16 --threads 2 --cache cold --repeats "$mm_repeats") ;;
    attention)
      cmd=("$bench" kernels --sweep docs/bench/cpu/attention-decode-4096.yaml --backend cpu --cache cold
           --repeats "$attn_repeats") ;;
    sample) cmd=("$bench" sample --repeats "$sample_repeats") ;;
    roofline) cmd=("${ck[@]}" --streams "" --roofline "$pairs"); needs_ckpt=1 ;;
    roofline-bf16) cmd=("${ck[@]}" --streams "" --roofline "$pairs" --activations bf16); needs_ckpt=1 ;;
    busy) cmd=("${ck[@]}" --streams "" --roofline "$pairs" --neighbours 1); needs_ckpt=1 ;;
    streams) cmd=("${ck[@]}" --streams 1,16 "${sweep[@]}" --activations bf16); needs_ckpt=1 ;;
    streams-f32) cmd=("${ck[@]}" --streams 1,16 "${sweep[@]}" --activations f32); needs_ckpt=1 ;;
    prefill) cmd=("${ck[@]}" --streams "" --prefill "$prompt" --activations bf16); needs_ckpt=1 ;;
    prefill-f32) cmd=("${ck[@]}" --streams "" --prefill "$prompt" --activations f32); needs_ckpt=1 ;;
    tts-demo) cmd=("$bench" run configs/tts-demo.yaml "${tts[@]}") ;;
    world-demo) cmd=("$bench" run configs/world-demo.yaml "${world[@]}") ;;
    stream) cmd=("$bench" stream configs/tts-demo.yaml --lengths "$lengths" --probe "$probe") ;;
    serve)
      cmd=("$serve_load" compare configs/tts-demo.yaml --streams 1,16 --repeats "$serve_repeats" --json)
      [ -x "$serve_load" ] || skip="$serve_load is not built" ;;
    peer-attention) cmd=("${peer[@]}" --rounds "$peer_rounds" attention --kv-lens "$kv_lens") ;;
    peer-decode)
      cmd=("${peer[@]}" --rounds "$peer_rounds" decode "$ckpt" --depths 0 --mstar-activations bf16 --gen "$gen")
      needs_ckpt=1 ;;
    peer-deep)
      cmd=("${peer[@]}" --rounds 1 decode "$ckpt" --depths "$depths" --mstar-activations bf16 --gen "$gen")
      needs_ckpt=1 ;;
  esac
  case "$1" in
    peer-*)
      local need=llama-bench
      [ "$1" = peer-attention ] && need=test-backend-ops
      if [ -z "$peer_bin" ]; then
        skip="no llama.cpp build: pass --peer-bin DIR or set MSTAR_PEER_BIN (docs/peer-llama-cpp.md)"
      elif [ ! -x "$peer_bin/$need" ]; then
        skip="$peer_bin/$need is not built (docs/peer-llama-cpp.md)"
      fi ;;
    serve) ;;
    *) cmd+=(--json) ;;
  esac
  return 0
}

# The command as a shell would take it back: words quoted only where needed.
command_text() {
  local a t=""
  for a in "$@"; do
    if [ -z "$a" ]; then
      a="''"
    elif [[ ! "$a" =~ ^[A-Za-z0-9_./,=:+@%-]+$ ]]; then
      a=$(printf '%q' "$a")
    fi
    t+="${t:+ }$a"
  done
  printf '%s' "$t"
}

if [ "$list" = 1 ]; then
  for r in "${selected[@]}"; do
    define_row "$r"
    printf '%-15s %s%s\n' "$r" "$(command_text "${cmd[@]}")" "${skip:+  (skipped: $skip)}"
  done
  exit 0
fi

[ -x "$bench" ] || die "$bench is not built (cmake --preset release && cmake --build --preset release)"
mkdir -p "$(dirname "$out")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# emit ROW COMMAND OUTPUT_FILE STATUS SKIP: one JSON line onto $out; fails
# when the row failed or printed something other than JSON.
emit() {
  python3 - "$@" >>"$out" <<'PY'
import datetime, json, sys
row, command, path, status, skip = sys.argv[1:6]
rec = {"row": row, "command": command,
       "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
if skip:
    rec.update(skipped=skip, result=None)
else:
    text = open(path, encoding="utf-8", errors="replace").read()
    dec, docs, i = json.JSONDecoder(), [], 0
    try:
        while True:
            while i < len(text) and text[i].isspace():
                i += 1
            if i == len(text):
                break
            doc, i = dec.raw_decode(text, i)
            docs.append(doc)
        rec["result"] = None if not docs else docs[0] if len(docs) == 1 else docs
    except json.JSONDecodeError as e:
        rec["result"] = None
        rec["error"] = f"output is not JSON ({e})"
        rec["output_tail"] = text[-2000:]
    if status != "0":
        rec["error"] = f"exit {status}"
print(json.dumps(rec, ensure_ascii=False))
sys.exit(1 if "error" in rec else 0)
PY
}

failed=0
for r in "${selected[@]}"; do
  define_row "$r"
  text=$(command_text "${cmd[@]}")
  if [ -n "$skip" ]; then
    echo "run.sh: row $r skipped: $skip" >&2
    emit "$r" "$text" /dev/null 0 "$skip"
    continue
  fi
  if [ "$needs_ckpt" = 1 ] && [ ! -f "$ckpt/config.json" ]; then
    echo "run.sh: making the checkpoint $ckpt (tools/hf/make-checkpoint.py --shape $shape --dtype bf16)" >&2
    if ! python3 tools/hf/make-checkpoint.py --shape "$shape" --dtype bf16 "$ckpt" >&2; then
      echo "run.sh: row $r failed: no checkpoint (make-checkpoint.py needs numpy)" >&2
      emit "$r" "$text" /dev/null 1 "" || true
      failed=1
      continue
    fi
  fi
  echo "run.sh: row $r: $text" >&2
  status=0
  "${cmd[@]}" >"$tmp/out" || status=$?
  if [ "$status" -ne 0 ]; then
    echo "run.sh: row $r failed (exit $status)" >&2
    failed=1
  fi
  emit "$r" "$text" "$tmp/out" "$status" "" || failed=1
done
echo "run.sh: ${#selected[@]} row(s) appended to $out" >&2
exit "$failed"
