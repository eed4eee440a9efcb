#!/usr/bin/env python3
"""Fails on an include that runs against mstar's layer order.

core -> kernels -> resources -> models -> config -> engine -> bench, serve
-> apps (the tokenizer sits on core, beside kernels, under config). A file
may include headers of its own layer and of the layers below it. Every
quoted include in lib/ and kernels/ is resolved (beside the file first, then
by its first folder, "kernels/ops.h" or "models/trunk.h") to the layer that
owns it; one that resolves nowhere is an error too, so a new folder cannot
slip past the check. The build enforces the same order for the folders a
target links (cmake/headers.cmake); this also catches relative paths.

Usage: check_layers.py SOURCE_ROOT
"""
import os
import re
import sys

BELOW = {
    "core": set(),
    "kernels": {"core"},
    "tokenizer": {"core"},
    "resources": {"core", "kernels"},
    "models": {"core", "kernels", "resources"},
    "config": {"core", "kernels", "resources", "models", "tokenizer"},
    "engine": {"core", "kernels", "resources", "models", "tokenizer", "config"},
    "bench": {"core", "kernels", "resources", "models", "tokenizer", "config", "engine"},
    "serve": {"core", "kernels", "resources", "models", "tokenizer", "config", "engine"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
SOURCES = (".h", ".cpp", ".cu", ".cuh", ".inc")


def layer_of(root, path):
    """The layer owning a file under root, or None."""
    rel = os.path.relpath(path, root).split(os.sep)
    if rel[0] == "kernels":
        return "kernels"
    if rel[0] == "lib" and len(rel) > 1 and rel[1] in BELOW:
        return rel[1]
    return None


def resolve(root, including, name):
    beside = os.path.normpath(os.path.join(os.path.dirname(including), name))
    if os.path.exists(beside):
        return beside
    first = name.split("/")[0]
    if first == "kernels":
        candidate = os.path.join(root, name)
    elif first in BELOW:
        candidate = os.path.join(root, "lib", name)
    else:
        return None
    return candidate if os.path.exists(candidate) else None


def main():
    root = os.path.abspath(sys.argv[1])
    errors = []
    checked = 0
    for top in ("lib", "kernels"):
        for folder, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if not f.endswith(SOURCES):
                    continue
                path = os.path.join(folder, f)
                own = layer_of(root, path)
                if own is None:
                    errors.append(f"{os.path.relpath(path, root)}: not in any layer's folder")
                    continue
                text = open(path, encoding="utf-8").read()
                for m in INCLUDE.finditer(text):
                    line = text.count("\n", 0, m.start()) + 1
                    where = f"{os.path.relpath(path, root)}:{line}"
                    target = resolve(root, path, m.group(1))
                    checked += 1
                    if target is None:
                        errors.append(f'{where}: "{m.group(1)}" resolves to no file of any layer')
                        continue
                    theirs = layer_of(root, target)
                    if theirs != own and theirs not in BELOW[own]:
                        errors.append(f'{where}: {own} includes "{m.group(1)}" of {theirs}, a layer above it')
    for e in errors:
        print(e)
    print(f"check_layers: {checked} includes checked, {len(errors)} against the layer order")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
