#!/usr/bin/env python3
"""The layout checks fail where they must: small crates written here, each
with what one check exists to catch (a circle through `super::` and bare
`child::` paths, an import against the layers, a room the page forgets,
a type's inherent impls over three files),
and the same crates without it, which pass.

Usage: selftest.py   (tests/run runs it in its layout phase)
"""

import atexit
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import architecture  # noqa: E402
import circles  # noqa: E402
import graph  # noqa: E402
import impls  # noqa: E402


def crate(files):
    """A directory holding `files` ({path: text}) under src/; its src path."""
    root = tempfile.mkdtemp(prefix="layout-selftest-")
    atexit.register(shutil.rmtree, root, True)
    for path, text in files.items():
        full = os.path.join(root, "src", path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as f:
            f.write(text)
    return os.path.join(root, "src")


def found_circles(files, allowed=()):
    return circles.check(crate(files), [frozenset(c) for c in allowed])[2]


# Three files in a circle: the parent calls a child by a bare path, that
# child calls its sibling through `super::`, which uses the parent's item.
THREE = {
    "lib.rs": "mod a;\n",
    "a/mod.rs": "mod b;\nmod c;\npub struct Error;\npub fn fa() { b::fb(); }\n",
    "a/b.rs": "pub fn fb() { super::c::fc(); }\n",
    "a/c.rs": "pub fn fc() -> super::Error { super::Error }\n",
}


class Circles(unittest.TestCase):
    def test_a_circle_through_super_and_a_bare_child_path_fails(self):
        self.assertEqual(
            found_circles(THREE),
            ["circle: src/a/b.rs <-> src/a/c.rs <-> src/a/mod.rs"],
        )

    def test_the_same_files_without_the_bare_call_pass(self):
        files = dict(THREE, **{"a/mod.rs": "mod b;\nmod c;\npub struct Error;\npub fn fa() {}\n"})
        self.assertEqual(found_circles(files), [])

    def test_a_use_with_an_alias_or_a_group_is_an_edge(self):
        for use in ("use super::c as other;", "use super::{c::{self, fc}};", "use self::super::c::fc;"):
            files = dict(THREE, **{"a/b.rs": use + "\npub fn fb() {}\n"})
            self.assertEqual(len(found_circles(files)), 1, use)

    def test_a_character_literal_hides_no_code(self):
        files = dict(THREE, **{"a/b.rs": "pub fn q() -> char { '\"' }\npub fn fb() { super::c::fc(); }\npub fn r() -> char { '\"' }\n"})
        self.assertEqual(len(found_circles(files)), 1)

    def test_paths_in_comments_strings_and_tests_are_no_edges(self):
        b = (
            "//! Calls [`super::c::fc`].\n"
            "/* super::c::fc() /* nested */ super::c::fc() */\n"
            "pub fn fb() -> &'static str { let _x: &'static str = \"super::c::fc\"; r#\"super::c::fc\"# }\n"
            "#[cfg(test)]\nmod tests {\n    fn t() { super::super::c::fc(); }\n}\n"
        )
        self.assertEqual(found_circles(dict(THREE, **{"a/b.rs": b})), [])

    def test_a_re_export_is_no_edge(self):
        files = dict(THREE, **{"a/mod.rs": "mod b;\nmod c;\npub struct Error;\npub use b::fb;\n"})
        self.assertEqual(found_circles(files), [])

    def test_a_listed_circle_passes_and_fails_once_broken_or_grown(self):
        listed = ["src/a/b.rs", "src/a/c.rs", "src/a/mod.rs"]
        self.assertEqual(found_circles(THREE, [listed]), [])
        broken = dict(THREE, **{"a/mod.rs": "mod b;\nmod c;\npub struct Error;\n"})
        self.assertEqual(len(found_circles(broken, [listed])), 1)
        smaller = ["src/a/c.rs", "src/a/mod.rs"]
        problems = found_circles(THREE, [smaller])
        self.assertEqual(len(problems), 2, problems)

    def test_the_crates_own_tree_has_no_circle_but_the_listed_ones(self):
        src = graph.default_src()
        self.assertEqual(circles.check(src, circles.known(circles.KNOWN))[2], [])


# A crate of four rooms and the page that maps it.
ROOMS = {
    "lib.rs": "pub mod cli;\npub mod events;\npub mod store;\n",
    "main.rs": "fn main() { mesh_host::cli::run() }\n",
    "cli/mod.rs": "pub fn run() { crate::store::open(); crate::events::log(); }\n",
    "store/mod.rs": "mod lock;\npub struct Store;\npub fn open() { lock::take(); }\n",
    "store/lock.rs": "pub fn take() {}\n",
    "events.rs": "pub fn log() {}\n",
}
PAGE = """# Architecture

## The rooms

| room | what it is |
|---|---|
| `cli/` | The command line. |
| `store/` | The state directory: `lock.rs` (the lock). |
| `events.rs` | Journal events. |

## The layers

```
main → cli
     → store / events
```

The state is `store::Store`, its lock in `store/lock.rs`.
"""


def problems(files=None, page=PAGE, **changes):
    files = dict(ROOMS if files is None else files, **changes)
    src = crate(files)
    return architecture.check(src, page)


class Architecture(unittest.TestCase):
    def test_the_page_of_a_crate_that_keeps_it_passes(self):
        self.assertEqual(problems(), [])

    def test_an_import_of_a_higher_layer_fails(self):
        got = problems(**{"store/lock.rs": "pub fn take() { crate::cli::run(); }\n"})
        self.assertEqual(len(got), 1, got)
        self.assertIn("store imports cli, a room of a higher layer: src/store/lock.rs", got[0])

    def test_an_import_through_a_use_line_of_a_higher_layer_fails(self):
        got = problems(**{"events.rs": "use crate::cli;\npub fn log() { cli::run() }\n"})
        self.assertTrue(any("events imports cli" in p for p in got), got)

    def test_an_import_of_a_room_of_the_same_layer_fails(self):
        got = problems(**{"events.rs": "pub fn log() { crate::store::open(); }\n"})
        self.assertEqual(len(got), 1, got)
        self.assertIn("events imports store, a room of its own layer", got[0])

    def test_a_room_missing_from_the_layers_or_a_room_that_is_not_there_fails(self):
        files = dict(ROOMS, **{"lib.rs": ROOMS["lib.rs"] + "pub mod task;\n", "task.rs": "pub fn spawn() {}\n"})
        got = problems(files, page=PAGE.replace("| `events.rs` |", "| `events.rs`, `task.rs` |"))
        self.assertEqual(got, ["the layers lack task: put it in its layer"])
        got = problems(page=PAGE.replace("store / events", "store / events / metrics"))
        self.assertEqual(got, ["the layers name metrics, which is no room of src/"])

    def test_a_room_or_file_the_rooms_table_lacks_or_misnames_fails(self):
        got = problems(page=PAGE.replace("| `events.rs` | Journal events. |\n", ""))
        self.assertEqual(got, ["the rooms table lacks events"])
        got = problems(page=PAGE.replace("`lock.rs` (the lock)", "`lock.rs` (the lock), `holder.rs`"))
        self.assertEqual(len(got), 1, got)
        self.assertIn("names `holder.rs`, which is not in store/", got[0])
        got = problems(page=PAGE.replace("| `events.rs` |", "| `events/` |"))
        self.assertEqual(got, ["the rooms table names events/, but events is a file"])

    def test_a_path_or_an_item_the_page_names_that_is_not_there_fails(self):
        got = problems(page=PAGE.replace("`store::Store`", "`store::Stores`"))
        self.assertEqual(got, ["docs/architecture.md names `store::Stores`, which is no item of the crate"])
        got = problems(page=PAGE.replace("`store/lock.rs`", "`store/locks.rs`"))
        self.assertEqual(got, ["docs/architecture.md names `store/locks.rs`, which is not there"])

    def test_the_crates_own_page_agrees(self):
        src = graph.default_src()
        with open(os.path.join(os.path.dirname(src), "docs", "architecture.md"), encoding="utf-8") as f:
            self.assertEqual(architecture.check(src, f.read()), [])


# A type of a/mod.rs with inherent impls in three files, and impls of a
# trait and of `impl Trait` types that are no inherent impls of it.
SPREAD = {
    "lib.rs": "mod a;\n",
    "a/mod.rs": "mod b;\nmod c;\n/// The table.\n#[derive(Debug)]\npub struct Table;\nimpl Table { fn one(&self) {} }\n",
    "a/b.rs": "use super::Table;\nimpl Table { fn two(&self) {} }\n",
    "a/c.rs": "impl super::Table { fn three(&self) {} }\n",
}


def spread_problems(files):
    return impls.check(crate(files))[1]


class Impls(unittest.TestCase):
    def test_inherent_impls_of_one_type_in_three_files_fail(self):
        got = spread_problems(SPREAD)
        self.assertEqual(len(got), 1, got)
        self.assertIn("inherent impls of Table (defined in src/a/mod.rs) spread over 3 files", got[0])
        self.assertIn("src/a/b.rs, src/a/c.rs, src/a/mod.rs", got[0])

    def test_a_doc_line_saying_why_lets_them_be(self):
        mod = SPREAD["a/mod.rs"].replace("/// The table.\n", "/// The table.\n///\n/// Impl spread: each file a concept.\n")
        self.assertEqual(spread_problems(dict(SPREAD, **{"a/mod.rs": mod})), [])

    def test_two_files_trait_impls_and_impl_trait_types_pass(self):
        files = dict(
            SPREAD,
            **{
                "a/c.rs": "use std::fmt;\nimpl fmt::Display for super::Table {\n"
                "    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { Ok(()) }\n}\n"
                "pub fn each(t: &super::Table) -> impl Iterator<Item = u8> + '_ { std::iter::empty() }\n"
                "#[cfg(test)]\nmod tests {\n    impl super::super::Table { fn four(&self) {} }\n}\n"
            },
        )
        self.assertEqual(spread_problems(files), [])

    def test_types_of_one_name_in_two_rooms_are_two_types(self):
        files = dict(
            SPREAD,
            **{
                "lib.rs": "mod a;\nmod d;\n",
                "d.rs": "pub struct Table;\nimpl Table { fn other(&self) {} }\n",
            },
        )
        self.assertEqual(len(spread_problems(files)), 1)
        self.assertEqual(spread_problems(dict(files, **{"a/c.rs": "\n"})), [])

    def test_the_crates_own_impls_pass(self):
        self.assertEqual(impls.check(graph.default_src())[1], [])


if __name__ == "__main__":
    unittest.main(verbosity=1)
