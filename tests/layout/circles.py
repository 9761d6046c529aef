#!/usr/bin/env python3
"""Circles between the crate's source files, drawn from their own imports.

The graph is graph.py's: every path a file's code (not its tests) names
to another file, `crate::`, `super::`, `self::` and bare `child::item`
paths alike, in `use` lines and in expressions. Prints each circle as
`a.rs <-> b.rs` and exits 1 when there is one, but for the crate's own
src/ the circles listed in known-circles.txt, each exactly as listed: a
list of what is left to break, which fails once one is broken or changes
until it is updated.

Usage: circles.py [SRC_DIR]   (default: the src/ beside tests/, with
known-circles.txt; another SRC_DIR: every circle fails)
"""

import os
import sys

from graph import default_src, file_graph

KNOWN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "known-circles.txt")


def circles(graph):
    """The strongly connected components of more than one file (Tarjan)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def known(path):
    """The circles a list allows (one a line, its files by path from the
    repository, `#` comments), as frozensets of paths."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                out.append(frozenset(line.split()))
    return out


def check(src, allowed=()):
    """The problems: each circle not allowed, each allowed one not found
    exactly (broken, or grown: the list says what is left to break)."""
    mods, graph = file_graph(src)
    root = os.path.dirname(os.path.abspath(src))
    name = lambda m: os.path.relpath(os.path.abspath(mods[m]), root)
    found = [frozenset(name(m) for m in comp) for comp in circles(graph)]
    problems = []
    for comp in found:
        if comp not in allowed:
            problems.append("circle: " + " <-> ".join(sorted(comp)))
    for comp in allowed:
        if comp not in found:
            problems.append(
                "listed circle no longer found as listed (broken or changed: "
                "update tests/layout/known-circles.txt): " + " ".join(sorted(comp))
            )
    return mods, found, problems


def main():
    args = sys.argv[1:]
    src = args[0] if args else default_src()
    # The list of circles still to break applies to the crate's own src/.
    allowed = known(KNOWN) if not args else []
    mods, found, problems = check(src, allowed)
    for p in problems:
        print(p)
    if problems:
        return 1
    left = f" ({len(found)} listed in {os.path.relpath(KNOWN)}, to break)" if found else ""
    print(f"no circles among {len(mods)} files{left}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
