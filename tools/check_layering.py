#!/usr/bin/env python3
"""Checks that every #include in the production code points down the layer map.

The layer map (each layer's folders and the layers it depends on) is the one CMake builds the
libraries from: <build>/layers.txt, written by cmake/RotaLayers.cmake. A file may include headers
of its own layer and of the layers it depends on, directly or through them. Prints every wrong-way
include as `file:line: <layer> includes "<header>" of <layer>` and exits 1 if there is one.
"""
import argparse
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def read_layers(path):
    """{layer: (folders, direct dependencies)} from layers.txt."""
    layers = {}
    with open(path, encoding="utf-8") as table:
        for line in table:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split()
            folders = parts[1].split(",")
            deps = parts[2].split(",") if len(parts) > 2 and parts[2] else []
            layers[parts[0]] = (folders, deps)
    return layers


def closure(layers, name, seen=None):
    """The layer and everything it depends on, transitively."""
    seen = set() if seen is None else seen
    if name in seen:
        return seen
    seen.add(name)
    for dep in layers[name][1]:
        closure(layers, dep, seen)
    return seen


def owner(layers, path):
    """The layer whose folder holds `path` (the longest matching folder), or None."""
    best, best_len = None, -1
    for name, (folders, _) in layers.items():
        for folder in folders:
            if (path == folder or path.startswith(folder + "/")) and len(folder) > best_len:
                best, best_len = name, len(folder)
    return best


def check(root, layers):
    """Yields (file, line number, layer, header, header's layer or None) for each violation."""
    allowed = {name: closure(layers, name) for name in layers}
    for name, (folders, _) in sorted(layers.items()):
        for folder in folders:
            for directory, _, files in os.walk(os.path.join(root, folder)):
                for file_name in sorted(files):
                    if not file_name.endswith((".h", ".cpp")):
                        continue
                    path = os.path.join(directory, file_name)
                    relative = os.path.relpath(path, root)
                    if owner(layers, relative) != name:
                        continue  # a nested folder of another layer (walked there)
                    with open(path, encoding="utf-8", errors="replace") as source:
                        for number, text in enumerate(source, 1):
                            match = INCLUDE.match(text)
                            if not match:
                                continue
                            header = match.group(1)
                            if "/" not in header:
                                continue  # a file next to the includer
                            target = owner(layers, header)
                            if target not in allowed[name]:
                                yield relative, number, name, header, target


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", required=True, help="layers.txt written by CMake")
    parser.add_argument("--root", required=True, help="the source tree")
    args = parser.parse_args()
    layers = read_layers(args.layers)
    problems = list(check(args.root, layers))
    for relative, number, name, header, target in problems:
        where = f"of {target}" if target else "of no layer"
        print(f'{relative}:{number}: {name} includes "{header}" {where}; {name} may use '
              f'{", ".join(sorted(closure(layers, name) - {name})) or "no other layer"}')
    print(f"layering: {len(problems)} wrong-way include(s) in {len(layers)} layers")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
