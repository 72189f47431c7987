#!/usr/bin/env python3
"""Checks that every #include in src/ follows the layering of docs/design.md: a layer includes only
itself and the layers it may depend on. Run by ctest (label unit); prints each forbidden arrow."""
import os
import re
import sys

# layer -> layers it may include (besides itself). "tandem" is the public include/tandem/.
ALLOWED = {
    "base": set(),
    "abi": {"base", "tandem"},
    "model": {"base", "tandem"},  # tandem: the ABI's constants (TANDEM_ACCESS_*)
    "engine": {"base", "tandem", "abi", "model"},
    "funcs": {"base", "tandem", "abi", "model"},
    # engine: only for the reconfiguration parameters the policy specs fill in
    "config": {"base", "tandem", "abi", "model", "funcs", "engine"},
    "devices": {"base", "tandem", "abi", "model", "funcs", "config"},
    "rt": {"base", "tandem", "abi", "model", "funcs", "engine", "config", "devices"},
    "sim": {"base", "tandem", "abi", "model", "funcs", "engine", "config", "devices"},
    "daemon": {"base", "tandem", "abi", "model", "funcs", "engine", "config", "devices", "rt"},
    "client": {"base", "tandem", "abi", "model", "funcs", "engine", "config", "devices", "rt"},
    # drop-in libraries: programs' stand-ins that use the public C API only
    "dropin": {"tandem"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def main(root):
    src = os.path.join(root, "src")
    problems = []
    for layer in sorted(os.listdir(src)):
        folder = os.path.join(src, layer)
        if not os.path.isdir(folder):
            continue
        if layer not in ALLOWED:
            problems.append(f"src/{layer}: a folder the layering table does not know (add it to {__file__})")
            continue
        for dirpath, _, files in os.walk(folder):
            for name in files:
                path = os.path.join(dirpath, name)
                if not name.endswith((".hpp", ".cc", ".h", ".in", ".cu")):
                    continue
                for m in INCLUDE.finditer(open(path, encoding="utf-8").read()):
                    target = m.group(1)
                    if "/" not in target:
                        if not (target.startswith("V") and target.endswith(".h")):  # Verilator output
                            problems.append(f"{os.path.relpath(path, root)}: \"{target}\": include by path (\"layer/file\")")
                        continue
                    to = target.split("/")[0]
                    if to != layer and to not in ALLOWED[layer]:
                        problems.append(f"{os.path.relpath(path, root)}: {layer} -> {to} (\"{target}\") is not allowed")
    for p in problems:
        print(p)
    print(f"check_layers: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")))
