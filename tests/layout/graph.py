"""The crate's graph between source files, drawn from their own code.

A file depends on another when its code outside `#[cfg(test)]` names an
item of the other's module, in a `use` line or in an expression, by any of
the paths Rust resolves: `crate::a::b`, `super::x` (and `super::super::`),
`self::x`, and a bare `child::item` where `child` is a module the file
declares. A `mod x;` declaration alone is not a dependency (the parent
contains the child; it does not use it), nor is a `pub use` re-export (a
module's face, naming what its children offer). `src/main.rs` is the
binary: its `mesh_host::` paths name the library's modules.

Comments, strings and character literals are read as what they are, so a
path in a doc comment or a `'"'` never adds or hides an edge. Used by
circles.py (no circle between files) and layers.py (docs/architecture.md's
layers kept).
"""

import os
import re

# The binary's crate root, as a module path of its own.
MAIN = ("main",)
# The library's name in the binary's paths.
LIBRARY = "mesh_host"


def module_files(src):
    """Module path (tuple of names) -> file path, for every .rs under src.

    `lib.rs` is the crate root `()`; `main.rs` is [`MAIN`]."""
    mods = {}
    for root, dirs, files in os.walk(src):
        dirs.sort()
        for f in sorted(files):
            if not f.endswith(".rs"):
                continue
            path = os.path.join(root, f)
            rel = os.path.relpath(path, src)[:-3].split(os.sep)
            if rel == ["main"]:
                mods[MAIN] = path
                continue
            if rel[-1] in ("mod", "lib"):
                rel = rel[:-1]
            mods[tuple(rel)] = path
    return mods


def code_only(text):
    """The text without its comments, and with every string and character
    literal emptied (`""`, `' '`), so that only code is left to read."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        nxt = text[i + 1] if i + 1 < n else ""
        if c == "/" and nxt == "/":
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if c == "/" and nxt == "*":
            # Block comments nest in Rust.
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
            out.append(" ")
            continue
        m = re.compile(r'b?r(#*)"').match(text, i)
        if m and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = text.find('"' + m.group(1), m.end())
            i = n if end < 0 else end + 1 + len(m.group(1))
            out.append('""')
            continue
        if c == '"' or (c == "b" and nxt == '"' and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_"))):
            i += 1 if c == '"' else 2
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
            out.append('""')
            continue
        if c == "'":
            # A character literal ('x', '\n', '\u{1F600}', '"'), or a
            # lifetime or label ('a, 'static), which is code.
            m = re.compile(r"'(?:\\(?:u\{[0-9A-Fa-f]+\}|x[0-9A-Fa-f]{2}|.)|[^\\'\n])'").match(text, i)
            if m:
                out.append("' '")
                i = m.end()
                continue
        out.append(c)
        i += 1
    return "".join(out)


def strip_tests(text):
    """The code without its `#[cfg(test)]` items."""
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


def test_modules(text):
    """Names of the `#[cfg(test)] mod x;` a file declares: files of tests."""
    return re.findall(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", text)


def split_top(s, sep=","):
    """`s` split on `sep` outside braces."""
    parts, depth, cur = [], 0, ""
    for c in s:
        if c == sep and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += c == "{"
        depth -= c == "}"
        cur += c
    parts.append(cur)
    return [p for p in parts if p]


def use_paths(tree):
    """The paths a `use` tree names: `a::{b, c::{d, self}, e as f, *}` ->
    `a::b`, `a::c::d`, `a::c`, `a::e`, `a::*`."""
    tree = re.sub(r"\s+as\s+\w+", "", tree)
    tree = re.sub(r"\s+", "", tree)
    stack, paths = [tree], []
    while stack:
        p = stack.pop()
        at = p.find("{")
        if at < 0:
            paths.append(p)
            continue
        prefix, inner = p[:at], p[at + 1 : p.rfind("}")]
        for part in split_top(inner):
            if part == "self":
                paths.append(prefix.rstrip(":"))
            else:
                stack.append(prefix + part)
    return paths


USE = re.compile(r"(\bpub(?:\s*\([^)]*\))?\s+)?\buse\s+([^;]+);")
# A path in code: two or more segments, not itself the tail of another.
PATH = re.compile(r"(?<![\w:])((?:[A-Za-z_]\w*)(?:\s*::\s*[A-Za-z_]\w*)+)")


def paths(mod, text, mods):
    """Every path the code (comments, strings and tests already gone) of
    module `mod` names that may reach another file of the crate."""
    found = []
    for m in USE.finditer(text):
        if m.group(1):
            # A re-export is the module's face, not a use of the other file.
            continue
        found += use_paths(m.group(2))
    code = USE.sub(" ", text)
    for m in PATH.finditer(code):
        p = re.sub(r"\s+", "", m.group(1))
        first = p.split("::")[0]
        if first in ("crate", "super", "self") or (mod != MAIN and mod + (first,) in mods):
            found.append(p)
        elif mod == MAIN and first == LIBRARY:
            found.append(p)
    return found


def resolve(here, path, mods):
    """The module (a key of mods) whose file a path names, or None: an item
    of this file, or outside the crate."""
    parts = path.split("::")
    if here == MAIN:
        if parts[0] != LIBRARY:
            return None
        base, rest = (), parts[1:]
    elif parts[0] == "crate":
        base, rest = (), parts[1:]
    else:
        base, rest = here, parts
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


def file_graph(src):
    """(mods, graph): every module of the crate with its file, and the
    modules each one's file depends on (the crate root never counted)."""
    mods = module_files(src)
    texts = {}
    for mod, path in mods.items():
        with open(path, encoding="utf-8") as f:
            texts[mod] = code_only(f.read())
    # Files of tests (`#[cfg(test)] mod tests;`) are not part of the graph.
    for mod, text in list(texts.items()):
        for child in test_modules(text):
            for m in [m for m in mods if m[: len(mod) + 1] == mod + (child,)]:
                mods.pop(m)
                texts.pop(m)
    graph = {}
    for mod in mods:
        edges = set()
        for p in paths(mod, strip_tests(texts[mod]), mods):
            target = resolve(mod, p, mods)
            if target is not None and target != mod and target != ():
                edges.add(target)
        graph[mod] = edges
    return mods, graph


def default_src():
    """The src/ beside tests/."""
    return os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src"))
