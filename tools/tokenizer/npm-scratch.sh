# Sourced by the tokenizer scripts. Installs the pinned JavaScript reference
# (package.json and package-lock.json beside this file) into a scratch folder
# under /tmp, once per lock file, and sets NPM_SCRATCH to that folder.
# Nothing is installed into the repository.
tok_tools_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
NPM_SCRATCH="/tmp/mstar-tokenizer-npm-$(sha256sum "$tok_tools_dir/package-lock.json" | cut -c1-12)"
if [ ! -f "$NPM_SCRATCH/.installed" ]; then
  command -v npm >/dev/null || { echo "npm is needed to install the JavaScript reference" >&2; exit 1; }
  mkdir -p "$NPM_SCRATCH"
  cp "$tok_tools_dir/package.json" "$tok_tools_dir/package-lock.json" "$NPM_SCRATCH/"
  echo "installing the pinned JavaScript reference into $NPM_SCRATCH" >&2
  (cd "$NPM_SCRATCH" && npm ci --no-audit --no-fund --loglevel=error >&2)
  touch "$NPM_SCRATCH/.installed"
fi
