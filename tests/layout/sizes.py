#!/usr/bin/env python3
"""Source files past 800 lines of code before their tests.

A file's size is its lines up to its inline `#[cfg(test)] mod tests`, or
all of them; files of tests (`tests.rs`, `*_tests.rs`, `proptests.rs`) are
not counted. Prints each file over the limit and exits 1 when there is one.

Usage: sizes.py [SRC_DIR] [LIMIT]   (default: the src/ beside tests/, 800)
"""

import os
import re
import sys


def code_lines(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    for i, line in enumerate(lines):
        if line.strip() == "#[cfg(test)]" and i + 1 < len(lines):
            if re.match(r"\s*mod \w+\s*\{", lines[i + 1]):
                return i
    return len(lines) - (1 if lines and lines[-1] == "" else 0)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "..", "src")
    limit = int(sys.argv[2]) if len(sys.argv) > 2 else 800
    over, count = [], 0
    for root, _dirs, files in os.walk(src):
        for f in sorted(files):
            if not f.endswith(".rs") or f in ("tests.rs", "proptests.rs") or f.endswith("_tests.rs"):
                continue
            count += 1
            path = os.path.join(root, f)
            n = code_lines(path)
            if n > limit:
                over.append((n, os.path.relpath(path, os.path.join(src, ".."))))
    for n, path in sorted(over, reverse=True):
        print(f"over {limit} lines of code: {path} ({n})")
    if over:
        return 1
    print(f"no file over {limit} lines of code among {count}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
