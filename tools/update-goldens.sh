#!/usr/bin/env bash
# Rewrites tests/golden/ from the current build (build/release). Review the
# diff before committing: a golden records what a user sees.
set -euo pipefail
cd "$(dirname "$0")/.."
check=build/release/apps/mstar-check
for c in tts-demo world-demo waypoint-720p hf-demo; do
  "$check" "configs/$c.yaml" > "tests/golden/$c.txt"
  "$check" "configs/$c.yaml" --json > "tests/golden/$c.json"
done
