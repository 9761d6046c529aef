#!/usr/bin/env python3
"""docs/architecture.md against the code's own module graph.

- The layers (the fenced block under "## The layers": rooms joined by
  `→`, highest first; rooms of one layer joined by `/`) name every room
  (top-level module of src/, and `main`) once, and only rooms that exist.
- No file imports against them: a file of one room names an item of
  another room only when that room is in a lower layer. Rooms of one layer
  never import each other. The imports are graph.py's (the same graph
  circles.py reads: `crate::`, `super::`, bare `child::` paths).
- The rooms table names every room once, each as it is (`x/` a
  directory, `x.rs` a file), and every file or directory a row names
  (`raw.rs`, `window/`, `scheduler/owed.rs`) is in that row's room.
- Elsewhere in the page, a path into src/ (`apply/order.rs`), into the
  repository (`tests/support/`) or to an item (`runtime::ContainerRuntime`)
  names something that is there.

Prints each problem and exits 1 when there is one.

Usage: architecture.py [SRC_DIR [DOC]]   (default: src/ and
docs/architecture.md beside tests/)
"""

import os
import re
import sys

from graph import MAIN, default_src, file_graph

ARROW = "→"


def rooms_of(mods):
    """Room name -> 'dir' or 'file', from the crate's modules."""
    rooms = {}
    for mod, path in mods.items():
        if not mod:
            continue
        if mod == MAIN:
            rooms["main"] = "file"
            continue
        kind = "dir" if len(mod) > 1 or os.path.basename(path) == "mod.rs" else "file"
        if rooms.get(mod[0]) != "dir":
            rooms[mod[0]] = kind
    return rooms


def section(doc, title):
    """The text of a `## title` section, up to the next `## `."""
    m = re.search(r"^## " + re.escape(title) + r"\s*$", doc, re.M)
    if not m:
        return None
    rest = doc[m.end() :]
    end = re.search(r"^## ", rest, re.M)
    return rest[: end.start()] if end else rest


def layers_of(doc):
    """The layers, highest first, each a list of rooms; or None."""
    text = section(doc, "The layers")
    if text is None:
        return None
    block = re.search(r"```[^\n]*\n(.*?)```", text, re.S)
    if not block:
        return None
    return [
        [room.strip() for room in layer.split("/") if room.strip()]
        for layer in re.sub(r"\s+", " ", block.group(1)).split(ARROW)
    ]


def room_of(mod):
    return "main" if mod == MAIN else mod[0]


def check_layers(doc, mods, graph, rooms):
    problems = []
    layers = layers_of(doc)
    if not layers:
        return ["no layers: a fenced block of rooms joined by → under '## The layers'"]
    level = {}
    for i, layer in enumerate(layers):
        for room in layer:
            if room in level:
                problems.append(f"the layers name {room} twice")
            level[room] = i
            if room not in rooms:
                problems.append(f"the layers name {room}, which is no room of src/")
    for room in sorted(rooms):
        if room not in level:
            problems.append(f"the layers lack {room}: put it in its layer")
    against = {}
    for a in sorted(graph):
        if not a:
            continue
        for b in sorted(graph[a]):
            ra, rb = room_of(a), room_of(b)
            if ra != rb and ra in level and rb in level and level[ra] >= level[rb]:
                against.setdefault((ra, rb), []).append((a, b))
    for (ra, rb), edges in sorted(against.items()):
        how = "of its own layer" if level[ra] == level[rb] else "of a higher layer"
        a, b = edges[0]
        root = os.path.dirname(os.path.abspath(mods[()])) if () in mods else "."
        rel = lambda m: os.path.relpath(os.path.abspath(mods[m]), os.path.dirname(root))
        more = f" (and {len(edges) - 1} more)" if len(edges) > 1 else ""
        problems.append(
            f"{ra} imports {rb}, a room {how}: {rel(a)} imports {rel(b)}{more}"
        )
    return problems


def table_rows(text):
    """(first cell, second cell) of each row of the first table in text."""
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) < 2 or set(cells[0]) <= set("-: "):
            continue
        rows.append((cells[0], "|".join(cells[1:])))
    return rows[1:]  # the header


def ticked(text):
    """The `code` spans of markdown text, its fenced blocks left out."""
    return re.findall(r"`([^`\n]+)`", re.sub(r"^```.*?^```", "", text, flags=re.S | re.M))


FILE_LIKE = re.compile(r"^[\w./-]*\w(?:\.rs|/)$")


def check_rooms_table(doc, src, rooms):
    problems = []
    text = section(doc, "The rooms")
    if text is None:
        return ["no '## The rooms' section"]
    named = {}
    for first, rest in table_rows(text):
        row_rooms = []
        for token in ticked(first):
            m = re.fullmatch(r"(\w+)(/|\.rs)", token)
            if not m:
                problems.append(f"the rooms table's row {first!r}: {token!r} is not a room (`x/` or `x.rs`)")
                continue
            room, kind = m.group(1), "dir" if m.group(2) == "/" else "file"
            named[room] = named.get(room, 0) + 1
            if room not in rooms:
                problems.append(f"the rooms table names {token}, which is no room of src/")
            elif rooms[room] != kind:
                problems.append(f"the rooms table names {token}, but {room} is a {rooms[room]}")
            if kind == "dir":
                row_rooms.append(room)
        for token in ticked(rest):
            if not FILE_LIKE.match(token) or token.startswith("/"):
                continue
            if not any(os.path.exists(os.path.join(src, room, token)) for room in row_rooms):
                where = " or ".join(f"{r}/" for r in row_rooms) or "a file room's row"
                problems.append(f"the rooms table's row of {first} names `{token}`, which is not in {where}")
    for room in sorted(rooms):
        if room != "main" and room not in named:
            problems.append(f"the rooms table lacks {room}")
        elif named.get(room, 0) > 1:
            problems.append(f"the rooms table names {room} {named[room]} times")
    return problems


def item_defined(path, name):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    kinds = r"(?:struct|enum|trait|type|fn|const|static|mod|union)"
    return re.search(r"\b" + kinds + r"\s+" + re.escape(name) + r"\b", text) or re.search(
        r"\bpub(?:\([^)]*\))?\s+use\s+[^;]*\b" + re.escape(name) + r"\b[^;]*;", text
    )


def check_paths(doc, src, mods, rooms):
    """Paths and items the page names outside the rooms table."""
    problems = []
    table = section(doc, "The rooms") or ""
    rest = doc.replace(table, "")
    repo = os.path.dirname(os.path.abspath(src))
    for token in sorted(set(ticked(rest))):
        if " " in token or "*" in token or token.startswith(("/", "-", ".")):
            continue
        if "::" in token and re.fullmatch(r"\w+(::\w+)+", token):
            parts = token.split("::")
            if parts[0] not in rooms:
                continue
            mod = tuple(parts[:-1])
            if tuple(parts) in mods:
                continue
            if mod not in mods or not item_defined(mods[mod], parts[-1]):
                problems.append(f"docs/architecture.md names `{token}`, which is no item of the crate")
            continue
        if "/" not in token or not re.fullmatch(r"[\w./-]+(?:\.\w+|/)", token):
            continue
        first = token.split("/")[0]
        if first in rooms:
            there = os.path.exists(os.path.join(src, token))
        else:
            there = os.path.exists(os.path.join(repo, token))
        if not there:
            problems.append(f"docs/architecture.md names `{token}`, which is not there")
    return problems


def check(src, doc):
    """Every problem of the page `doc` (its text) against the crate in src."""
    mods, graph = file_graph(src)
    rooms = rooms_of(mods)
    return (
        check_layers(doc, mods, graph, rooms)
        + check_rooms_table(doc, src, rooms)
        + check_paths(doc, src, mods, rooms)
    )


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else default_src()
    doc_path = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(src), "docs", "architecture.md")
    with open(doc_path, encoding="utf-8") as f:
        doc = f.read()
    problems = check(src, doc)
    for p in problems:
        print(p)
    if problems:
        return 1
    print(f"{os.path.relpath(doc_path)} agrees with the module graph")
    return 0


if __name__ == "__main__":
    sys.exit(main())
