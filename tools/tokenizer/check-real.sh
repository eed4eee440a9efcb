#!/usr/bin/env bash
# Compares mstar-tokenize with the JavaScript reference on the real Llama 3
# and Qwen3 vocabularies over a few MB of text (licenses, man pages in every
# installed language, generated mixed-script text) and prints the number of
# mismatching strings, which should be 0. Exit 1 when any string differs.
#   tools/tokenizer/check-real.sh [MSTAR_TOKENIZE]   (default: build/release/apps/mstar-tokenize)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
mstar="${1:-$root/build/release/apps/mstar-tokenize}"
[ -x "$mstar" ] || { echo "check-real: $mstar is not built (cmake --build --preset release)" >&2; exit 2; }
source "$here/npm-scratch.sh"
work="$(mktemp -d /tmp/mstar-tokenizer-check.XXXXXX)"
trap 'rm -rf "$work"' EXIT
node "$here/make_real_corpus.mjs" "$work"
node "$here/check_real.mjs" "$NPM_SCRATCH" "$mstar" "$work/corpus.jsonl"
