#!/usr/bin/env python3
"""Circles between the crate's source files, drawn from their own imports.

A file depends on another when its code outside `#[cfg(test)]` names an
item of the other's module: `crate::a::b` and `super::x` paths alike, in
`use` lines and in expressions. A `mod x;` declaration alone is not a
dependency (the parent contains the child; it does not use it), nor is a
`pub use` re-export (a module's face, naming what its children offer). Prints each
circle as `a.rs -> b.rs -> a.rs` and exits 1 when there is one.

Usage: circles.py [SRC_DIR]   (default: the src/ beside tests/)
"""

import os
import re
import sys


def module_files(src):
    """Module path (tuple of names) -> file path, for every .rs under src."""
    mods = {}
    for root, _dirs, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            path = os.path.join(root, f)
            rel = os.path.relpath(path, src)[:-3].split(os.sep)
            if rel[-1] in ("mod", "lib", "main"):
                rel = rel[:-1]
            mods[tuple(rel)] = path
    return mods


def strip_tests_and_comments(text):
    """The file's text without comments, strings and `#[cfg(test)]` items."""
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]\s*", text):
        if m.start() < i:
            continue
        out.append(text[i : m.start()])
        j = m.end()
        # Skip the item: up to its `;` (a `mod x;`) or its balanced braces.
        depth = 0
        while j < len(text):
            c = text[j]
            if c == ";" and depth == 0:
                j += 1
                break
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    j += 1
                    break
            j += 1
        i = j
    out.append(text[i:])
    return "".join(out)


PATH = re.compile(r"\b((?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)+|(?:crate|super)::\{[^}]*\})")


def expand(path):
    """`a::{b, c::d}` -> ['a::b', 'a::c::d'] (one level of braces)."""
    m = re.match(r"(.*)::\{(.*)\}$", path, re.S)
    if not m:
        return [path]
    return [m.group(1) + "::" + p.strip() for p in m.group(2).split(",") if p.strip()]


def uses(text):
    for m in re.finditer(r"(\bpub(?:\([^)]*\))?\s+)?\buse\s+([^;]+);", text):
        if m.group(1):
            # A re-export is the module's face, not a use of the other file.
            continue
        body = re.sub(r"\s+", "", m.group(2))
        stack = [body]
        while stack:
            p = stack.pop()
            mm = re.match(r"(.*?)::\{(.*)\}$", p)
            if mm:
                parts, depth, cur = [], 0, ""
                for c in mm.group(2):
                    if c == "," and depth == 0:
                        parts.append(cur)
                        cur = ""
                        continue
                    depth += c == "{"
                    depth -= c == "}"
                    cur += c
                parts.append(cur)
                stack += [mm.group(1) + "::" + q for q in parts if q and q != "self"]
            else:
                yield re.sub(r"\bas\w+$", "", p)
    text = re.sub(r"\bpub(?:\([^)]*\))?\s+use\s+[^;]+;", "", text)
    for m in PATH.finditer(text):
        yield from expand(m.group(1))


def resolve(here, path, mods):
    """The file a path names, or None (an item of this file, or outside)."""
    parts = path.split("::")
    if parts[0] == "crate":
        base, rest = (), parts[1:]
    else:
        base = here
        rest = parts
        while rest and rest[0] in ("super", "self"):
            if rest[0] == "super":
                base = base[:-1]
            rest = rest[1:]
    best = None
    for k in range(len(rest) + 1):
        key = base + tuple(rest[:k])
        if key in mods:
            best = key
    return best


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "src"
    )
    mods = module_files(src)
    # Files of tests (`#[cfg(test)] mod tests;`) are not part of the graph.
    for mod, path in list(mods.items()):
        text = open(path, encoding="utf-8").read()
        for m in re.finditer(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", text):
            mods.pop(mod + (m.group(1),), None)
    graph = {}
    for mod, path in mods.items():
        text = strip_tests_and_comments(open(path, encoding="utf-8").read())
        # A file's own module path, for `super`: a mod.rs is its directory.
        edges = set()
        for p in uses(text):
            target = resolve(mod, p, mods)
            if target is not None and target != mod and target != ():
                edges.add(target)
        graph[mod] = edges
    # Tarjan's strongly connected components.
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
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
    name = lambda m: os.path.relpath(mods[m], os.path.dirname(src.rstrip("/")) or ".")
    for comp in out:
        print("circle: " + " <-> ".join(sorted(name(m) for m in comp)))
    if out:
        return 1
    print(f"no circles among {len(mods)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
