#!/usr/bin/env python3
"""A type's inherent `impl` blocks kept to at most two files.

A type whose methods are spread over many files is read in pieces: what it
can do is nowhere whole. Each inherent `impl` (not `impl Trait for`) in a
file's code (comments, strings and tests gone, as graph.py reads them) is
put to the type it names, found as Rust finds it: a type of the same file,
a path (`super::Daemon`, `crate::a::B`) or the `use` line naming it,
followed through re-exports. A type whose inherent impls are in more than
two files fails, unless a line of its definition's doc comment starts
`Impl spread:` and says why. Prints each and exits 1 when there is one.

Usage: impls.py [SRC_DIR]   (default: the src/ beside tests/)
"""

import os
import re
import sys

from graph import USE, code_only, default_src, module_files, resolve, strip_tests, test_modules, use_paths

LIMIT = 2
DEF = r"\b(?:struct|enum|union)\s+{name}\b"
IMPL = re.compile(r"\bimpl\b")


def sources(src):
    """(mods, code): every module with its file, and each file's code
    (comments, strings and tests gone); files of tests left out."""
    mods = module_files(src)
    texts = {}
    for mod, path in mods.items():
        with open(path, encoding="utf-8") as f:
            texts[mod] = code_only(f.read())
    for mod, text in list(texts.items()):
        for child in test_modules(text):
            for m in [m for m in mods if m[: len(mod) + 1] == mod + (child,)]:
                mods.pop(m)
                texts.pop(m)
    return mods, {mod: strip_tests(text) for mod, text in texts.items()}


def defines(code, name):
    return re.search(DEF.format(name=re.escape(name)), code) is not None


def impl_headers(code):
    """The type path of each inherent `impl` in code."""
    out = []
    for m in IMPL.finditer(code):
        # An item begins a statement; `-> impl Trait` or `x: impl Trait`
        # is a type.
        before = code[: m.start()].rstrip()
        if before and before[-1] not in "};{]":
            continue
        i, n = m.end(), len(code)
        # The impl's own generics: `impl<T: A<B>>`.
        j = i
        while j < n and code[j].isspace():
            j += 1
        if j < n and code[j] == "<":
            depth = 0
            while j < n:
                depth += code[j] == "<"
                depth -= code[j] == ">"
                j += 1
                if depth == 0:
                    break
        # The header, up to its body (`{` outside `<>`) or a `;`.
        depth, k = 0, j
        while k < n and not (code[k] in "{;" and depth == 0):
            depth += code[k] == "<"
            depth -= code[k] == ">" and code[k - 1] != "-"
            k += 1
        header = code[j:k]
        header = re.split(r"\bwhere\b", header)[0]
        top = re.sub(r"<[^<>]*>", "", header)
        while re.search(r"<[^<>]*>", top):
            top = re.sub(r"<[^<>]*>", "", top)
        if re.search(r"\bfor\b", top) or k >= n or code[k] != "{":
            continue  # a trait's impl, or no impl at all (`impl Trait` in a signature)
        path = re.sub(r"\s+", "", re.sub(r"\b(dyn|mut)\b|&|'\w+", " ", top))
        if re.fullmatch(r"[A-Za-z_]\w*(::[A-Za-z_]\w*)*", path):
            out.append(path)
    return out


def used_paths(code, name):
    """The paths the `use` lines of code (re-exports too) name `name` by."""
    out = []
    for m in USE.finditer(code):
        for p in use_paths(m.group(2)):
            if p.split("::")[-1] == name:
                out.append(p)
    return out


def globbed(code, name):
    """`name` under each module a `use m::*` of code brings in."""
    out = []
    for m in USE.finditer(code):
        for p in use_paths(m.group(2)):
            if p.endswith("::*"):
                out.append(p[: -len("*")] + name)
    return out


def definition(mods, code, here, path, depth=0):
    """The module whose file defines the type `path` names in module
    `here`, or None when it cannot be told."""
    name = path.split("::")[-1]
    if depth > 8:
        return None
    if "::" not in path:
        if defines(code[here], name):
            return here
        for p in used_paths(code[here], name) + globbed(code[here], name):
            found = definition(mods, code, here, p, depth + 1)
            if found is not None:
                return found
        # A type a macro of this file makes, or one defined once in the crate.
        defining = [m for m in mods if defines(code[m], name)]
        if len(defining) == 1:
            return defining[0]
        return here if depth == 0 and not defining else None
    target = resolve(here, path, mods)
    if target is None:
        return None
    if defines(code[target], name):
        return target
    for p in used_paths(code[target], name):
        found = definition(mods, code, target, p, depth + 1)
        if found is not None:
            return found
    return None


def justified(path, name):
    """Whether the definition's doc comment has a line `Impl spread: ...`."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    pattern = re.compile(r"^\s*(pub(\s*\([^)]*\))?\s+)?" + DEF.format(name=re.escape(name)))
    for i, line in enumerate(lines):
        if not pattern.search(line):
            continue
        j = i - 1
        while j >= 0 and (lines[j].strip().startswith(("///", "#[")) or lines[j].strip().startswith("//")):
            if re.match(r"^\s*///\s*Impl spread:", lines[j]):
                return True
            j -= 1
    return False


def check(src):
    """(count, problems): types with inherent impls, and each spread over
    more than LIMIT files without its reason."""
    mods, code = sources(src)
    spread = {}
    for mod in sorted(mods):
        for path in impl_headers(code[mod]):
            where = definition(mods, code, mod, path)
            key = (where, path.split("::")[-1])
            spread.setdefault(key, set()).add(mod)
    root = os.path.dirname(os.path.abspath(src))
    rel = lambda m: os.path.relpath(os.path.abspath(mods[m]), root)
    problems = []
    for (where, name), files in sorted(spread.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        if len(files) <= LIMIT:
            continue
        if where is not None and justified(mods[where], name):
            continue
        at = rel(where) if where is not None else "a file not found"
        problems.append(
            f"inherent impls of {name} (defined in {at}) spread over {len(files)} files "
            f"(at most {LIMIT}, or a doc line `Impl spread:` saying why): "
            + ", ".join(sorted(rel(m) for m in files))
        )
    return len(spread), problems


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else default_src()
    count, problems = check(src)
    for p in problems:
        print(p)
    if problems:
        return 1
    print(f"no type's inherent impls over {LIMIT} files, or without their reason, among {count} types")
    return 0


if __name__ == "__main__":
    sys.exit(main())
