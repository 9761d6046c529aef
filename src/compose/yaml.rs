//! A compose file's YAML, read event by event (saphyr-parser) into JSON
//! values, bounded and faithful:
//!
//! - **Bounded.** Nesting is counted as each event arrives, never by
//!   recursing on the input, and refused past [`MAX_DEPTH`]; every alias
//!   adds the size of what it repeats to a count refused past
//!   [`MAX_EXPANSION`] (an anchored megabyte aliased 200 times stops at
//!   the ninth alias, not at 200 MB). The file's own size is bounded
//!   before it gets here ([`super::input`]).
//! - **Faithful to compose** (Go's YAML library): a key repeated in one
//!   mapping is refused, keys compared as written (`1:` and `"1":`
//!   collide), as compose refuses it; a key YAML reads as a number, a
//!   boolean or null is refused, as compose refuses a non-string key;
//!   merge keys (`<<: *base`, `<<: [*a, *b]`) give what the mapping does
//!   not say itself, the first source winning; scalars resolve as
//!   `scalar.rs` says.
//! - **Tags kept**: compose's `!reset` (the value is dropped here, and the
//!   same path dropped from the files before it) and `!override` (the
//!   value replaces the earlier files' instead of merging with them) are
//!   returned as [`Mark`]s for the merge; YAML's own `!!str`, `!!int`,
//!   `!!binary`, ... are applied; any other tag is refused, where compose
//!   would drop it in silence.
//!
//! An error names a line and column and what is wrong there, never the
//! text there.

use std::collections::HashMap;
use std::fmt;

use saphyr_parser::{Event, Marker, Parser, ScalarStyle, Tag};
use serde_json::{Map, Value};

/// Mappings and sequences inside one another, at most. Compose's deepest
/// field (`services.S.deploy.resources.reservations.devices[].options`)
/// is eight deep.
pub const MAX_DEPTH: usize = 64;
/// Bytes that aliases may add to one file, in all.
pub const MAX_EXPANSION: u64 = 8 << 20;

/// What a node's size counts beside its text: a value read, however
/// small, costs something, so a million empty aliases count too.
const NODE_COST: u64 = 16;

/// A compose tag on the value at `path` (keys from the document's root).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mark {
    pub path: Vec<String>,
    pub kind: MarkKind,
}

/// `!reset` or `!override`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkKind {
    Reset,
    Override,
}

/// One YAML document of a file.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    pub value: Value,
    pub marks: Vec<Mark>,
}

/// Why a file's YAML was not read: where, and what is wrong there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlError {
    pub line: usize,
    /// From 1.
    pub column: usize,
    pub what: String,
}

impl fmt::Display for YamlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}, column {}: {}",
            self.line, self.column, self.what
        )
    }
}

fn error(at: Marker, what: impl Into<String>) -> YamlError {
    YamlError {
        line: at.line(),
        column: at.col() + 1,
        what: what.into(),
    }
}

/// A compose tag of a node, or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Special {
    None,
    Reset,
    Override,
}

/// A node read whole, with what it costs and its compose tag.
#[derive(Debug, Clone)]
struct Node {
    value: Value,
    special: Special,
    cost: u64,
}

/// A mapping or sequence being read.
#[derive(Debug)]
enum Frame {
    Seq {
        items: Vec<Value>,
        head: Head,
    },
    Map {
        entries: Map<String, Value>,
        /// Keys as written, with the line each was first given on.
        seen: HashMap<String, usize>,
        /// The key whose value comes next, and where it was.
        key: Option<(String, Marker)>,
        /// What `<<` merges in, in order.
        merges: Vec<Value>,
        head: Head,
    },
}

/// What a collection carries from its start event to its end.
#[derive(Debug)]
struct Head {
    anchor: usize,
    special: Special,
    /// The reader's cost when it began.
    cost_before: u64,
    at: Marker,
}

/// What a tag makes of a node: its compose meaning, or a YAML core type
/// to apply (scalars), or a refusal.
enum TagMeaning {
    Special(Special),
    Core(String),
}

fn meaning(tag: &Tag, at: Marker) -> Result<TagMeaning, YamlError> {
    if tag.handle == "!" && tag.suffix == "reset" {
        return Ok(TagMeaning::Special(Special::Reset));
    }
    if tag.handle == "!" && tag.suffix == "override" {
        return Ok(TagMeaning::Special(Special::Override));
    }
    if tag.is_yaml_core_schema() {
        return Ok(TagMeaning::Core(tag.suffix.clone()));
    }
    Err(error(
        at,
        "a tag compose gives no meaning to (compose's own are !reset and !override): remove it",
    ))
}

/// Reads the events of one file.
struct Reader {
    frames: Vec<Frame>,
    /// Anchored nodes by the parser's id.
    anchors: HashMap<usize, Node>,
    /// What everything read so far costs.
    cost: u64,
    /// What aliases have added.
    expanded: u64,
    marks: Vec<Mark>,
    root: Option<Node>,
}

impl Reader {
    fn new() -> Self {
        Reader {
            frames: Vec::new(),
            anchors: HashMap::new(),
            cost: 0,
            expanded: 0,
            marks: Vec::new(),
            root: None,
        }
    }

    fn open(&mut self, frame: Frame, at: Marker) -> Result<(), YamlError> {
        if self.frames.len() >= MAX_DEPTH {
            return Err(error(
                at,
                format!("nested deeper than {MAX_DEPTH} levels, deeper than any compose file"),
            ));
        }
        self.cost += NODE_COST;
        self.frames.push(frame);
        Ok(())
    }

    /// The keys (and indexes) from the root to the frame on top.
    fn parent_path(&self) -> Vec<String> {
        let n = self.frames.len().saturating_sub(1);
        self.frames[..n]
            .iter()
            .map(|f| match f {
                Frame::Seq { items, .. } => items.len().to_string(),
                Frame::Map { key, .. } => key.as_ref().map(|(k, _)| k.clone()).unwrap_or_default(),
            })
            .collect()
    }

    fn head(&mut self, anchor: usize, tag: Option<&Tag>, at: Marker) -> Result<Head, YamlError> {
        let special = match tag.map(|t| meaning(t, at)).transpose()? {
            None => Special::None,
            Some(TagMeaning::Special(s)) => s,
            Some(TagMeaning::Core(suffix)) if suffix == "map" || suffix == "seq" => Special::None,
            Some(TagMeaning::Core(_)) => {
                return Err(error(
                    at,
                    "a YAML tag that has no meaning on a mapping or a sequence of a compose file",
                ))
            }
        };
        Ok(Head {
            anchor,
            special,
            cost_before: self.cost,
            at,
        })
    }

    fn scalar(
        &mut self,
        text: &str,
        style: ScalarStyle,
        anchor: usize,
        tag: Option<&Tag>,
        at: Marker,
    ) -> Result<(), YamlError> {
        // A key: text as written, refused when YAML reads it as anything
        // but text.
        if let Some(Frame::Map {
            key: key @ None, ..
        }) = self.frames.last_mut()
        {
            if tag.is_some() || anchor != 0 {
                return Err(error(at, "a tag or an anchor on a key: remove it"));
            }
            if style == ScalarStyle::Plain && text != "<<" {
                match super::scalar::plain(text) {
                    Some(Value::String(_)) => {}
                    _ => {
                        return Err(error(
                            at,
                            "a key YAML reads as a number, a boolean or null, which compose refuses: quote it",
                        ))
                    }
                }
            }
            *key = Some((text.to_owned(), at));
            return Ok(());
        }
        let mut special = Special::None;
        let value = match tag.map(|t| meaning(t, at)).transpose()? {
            Some(TagMeaning::Core(suffix)) => {
                super::scalar::tagged(&suffix, text).map_err(|e| error(at, e))?
            }
            other => {
                if let Some(TagMeaning::Special(s)) = other {
                    special = s;
                }
                if style == ScalarStyle::Plain {
                    super::scalar::plain(text).ok_or_else(|| {
                        error(
                            at,
                            "a number that is not finite (.inf, .nan), which compose cannot use",
                        )
                    })?
                } else {
                    Value::String(text.to_owned())
                }
            }
        };
        let cost = NODE_COST + text.len() as u64;
        self.cost += cost;
        let node = Node {
            value,
            special,
            cost,
        };
        if anchor != 0 {
            self.anchors.insert(anchor, node.clone());
        }
        self.place(node, at)
    }

    fn alias(&mut self, id: usize, at: Marker) -> Result<(), YamlError> {
        if let Some(Frame::Map { key: None, .. }) = self.frames.last() {
            return Err(error(at, "an alias as a key: write the key out"));
        }
        let node = self
            .anchors
            .get(&id)
            .cloned()
            .ok_or_else(|| error(at, "an alias to an anchor not yet defined"))?;
        self.expanded += node.cost;
        self.cost += node.cost;
        if self.expanded > MAX_EXPANSION {
            return Err(error(
                at,
                format!(
                    "aliases here expand past {} MiB: an anchor repeated too often, or too large",
                    MAX_EXPANSION >> 20
                ),
            ));
        }
        self.place(node, at)
    }

    fn close(&mut self, at: Marker) -> Result<(), YamlError> {
        let frame = self
            .frames
            .pop()
            .ok_or_else(|| error(at, "a collection ended that never began"))?;
        let (value, head) = match frame {
            Frame::Seq { items, head } => (Value::Array(items), head),
            Frame::Map {
                mut entries,
                merges,
                head,
                ..
            } => {
                // What `<<` brings: keys the mapping does not give itself,
                // the first source that gives one winning.
                for source in merges {
                    let Value::Object(source) = source else {
                        continue;
                    };
                    for (k, v) in source {
                        entries.entry(k).or_insert(v);
                    }
                }
                (Value::Object(entries), head)
            }
        };
        let node = Node {
            value,
            special: head.special,
            cost: self.cost - head.cost_before,
        };
        if head.anchor != 0 {
            self.anchors.insert(head.anchor, node.clone());
        }
        self.place(node, head.at)
    }

    /// Put a finished node where it belongs: in the frame on top, or as
    /// the document's root.
    fn place(&mut self, node: Node, at: Marker) -> Result<(), YamlError> {
        let mut path = if node.special == Special::None {
            Vec::new()
        } else {
            self.parent_path()
        };
        let Some(frame) = self.frames.last_mut() else {
            self.root = Some(node);
            return Ok(());
        };
        match frame {
            Frame::Seq { items, .. } => {
                // compose drops a `!reset` item (and keeps no mark for it).
                if node.special != Special::Reset {
                    items.push(node.value);
                }
            }
            Frame::Map {
                entries,
                seen,
                key,
                merges,
                ..
            } => {
                let Some((k, key_at)) = key.take() else {
                    return Err(error(
                        at,
                        "a mapping key that is not text: write it as text",
                    ));
                };
                if let Some(first) = seen.get(&k) {
                    return Err(error(
                        key_at,
                        format!("a key given twice in one mapping (first at line {first}), which compose refuses: keep one"),
                    ));
                }
                seen.insert(k.clone(), key_at.line());
                if k == "<<" {
                    match node.value {
                        Value::Object(_) => merges.push(node.value),
                        Value::Array(sources) if sources.iter().all(Value::is_object) => {
                            merges.extend(sources)
                        }
                        _ => {
                            return Err(error(
                                key_at,
                                "a merge key (<<) takes a mapping or a list of mappings",
                            ))
                        }
                    }
                    return Ok(());
                }
                path.push(k.clone());
                match node.special {
                    Special::Reset => self.marks.push(Mark {
                        path,
                        kind: MarkKind::Reset,
                    }),
                    Special::Override => {
                        self.marks.push(Mark {
                            path,
                            kind: MarkKind::Override,
                        });
                        entries.insert(k, node.value);
                    }
                    Special::None => {
                        entries.insert(k, node.value);
                    }
                }
            }
        }
        Ok(())
    }
}

/// What the parser's own messages say, kept as they are: none of them
/// quotes the input but one, which quotes one of three characters.
fn parse_error(e: &saphyr_parser::ScanError) -> YamlError {
    error(*e.marker(), format!("not valid YAML: {}", e.info()))
}

/// The documents of one file's text (compose reads each in turn, as if
/// each were a file given after the one before).
pub fn documents(text: &str) -> Result<Vec<Document>, YamlError> {
    let mut parser = Parser::new_from_str(text);
    let mut out = Vec::new();
    let mut reader = Reader::new();
    // Aliases count against one bound for the whole file.
    let mut expanded = 0;
    while let Some(event) = parser.next_event() {
        let (event, span) = event.map_err(|e| parse_error(&e))?;
        let at = span.start;
        match event {
            Event::StreamStart | Event::StreamEnd | Event::Nothing => {}
            Event::DocumentStart(_) => {
                reader = Reader::new();
                reader.expanded = expanded;
            }
            Event::DocumentEnd => {
                expanded = reader.expanded;
                let marks = std::mem::take(&mut reader.marks);
                if let Some(root) = reader.root.take() {
                    out.push(Document {
                        value: root.value,
                        marks,
                    });
                }
            }
            Event::Alias(id) => reader.alias(id, at)?,
            Event::Scalar(text, style, anchor, tag) => {
                reader.scalar(&text, style, anchor, tag.as_deref(), at)?
            }
            Event::SequenceStart(anchor, tag) => {
                if let Some(Frame::Map { key: None, .. }) = reader.frames.last() {
                    return Err(error(
                        at,
                        "a sequence as a mapping key: write the key as text",
                    ));
                }
                let head = reader.head(anchor, tag.as_deref(), at)?;
                reader.open(
                    Frame::Seq {
                        items: Vec::new(),
                        head,
                    },
                    at,
                )?;
            }
            Event::MappingStart(anchor, tag) => {
                if let Some(Frame::Map { key: None, .. }) = reader.frames.last() {
                    return Err(error(
                        at,
                        "a mapping as a mapping key: write the key as text",
                    ));
                }
                let head = reader.head(anchor, tag.as_deref(), at)?;
                reader.open(
                    Frame::Map {
                        entries: Map::new(),
                        seen: HashMap::new(),
                        key: None,
                        merges: Vec::new(),
                        head,
                    },
                    at,
                )?;
            }
            Event::SequenceEnd | Event::MappingEnd => reader.close(at)?,
        }
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn one(text: &str) -> Value {
        let mut docs = documents(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(docs.len(), 1, "{text}");
        docs.remove(0).value
    }

    fn refused(text: &str) -> YamlError {
        match documents(text) {
            Ok(d) => panic!("{text}: read as {d:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn values_read_as_compose_reads_them() {
        assert_eq!(
            one("a: 1\nb: yes\nc: \"1\"\nd: [x, 2.5, null, true]\ne: 0o1777\nf: |\n  line\n"),
            json!({"a": 1, "b": "yes", "c": "1", "d": ["x", 2.5, null, true], "e": 1023, "f": "line\n"})
        );
        assert!(documents("").unwrap().is_empty());
    }

    #[test]
    fn anchors_aliases_and_merge_keys_apply_as_in_yaml_1_1() {
        let v = one(
            "base: &b {image: x, restart: always}\nlog: &l {tty: true}\nweb:\n  <<: [*b, *l]\n  restart: \"no\"\nother:\n  <<: *b\n",
        );
        assert_eq!(
            v["web"],
            json!({"image": "x", "restart": "no", "tty": true})
        );
        assert_eq!(v["other"], json!({"image": "x", "restart": "always"}));
        let e = refused("a: &x 1\nb:\n  <<: *x\n");
        assert!(e.what.contains("merge key"), "{e}");
    }

    #[test]
    fn a_key_given_twice_is_refused_as_compose_refuses_it() {
        let e = refused("labels:\n  1x: a\n  \"1x\": b\n");
        assert_eq!((e.line, e.column), (3, 3));
        assert!(e.what.contains("first at line 2"), "{e}");
        let e = refused("a: 1\nb: 2\na: 3\n");
        assert_eq!(e.line, 3);
        // A key YAML reads as a number: compose refuses it too.
        let e = refused("labels:\n  1: a\n");
        assert!(e.what.contains("quote it"), "{e}");
        assert_eq!(
            one("labels:\n  \"1\": a\n  '2': b\n"),
            json!({"labels": {"1": "a", "2": "b"}})
        );
    }

    #[test]
    fn compose_tags_become_marks_and_yaml_tags_apply() {
        let docs =
            documents("services:\n  web:\n    ports: !reset []\n    env: !override {A: 1}\n")
                .unwrap();
        assert_eq!(
            docs[0].value,
            json!({"services": {"web": {"env": {"A": 1}}}})
        );
        assert_eq!(
            docs[0].marks,
            [
                Mark {
                    path: vec!["services".into(), "web".into(), "ports".into()],
                    kind: MarkKind::Reset
                },
                Mark {
                    path: vec!["services".into(), "web".into(), "env".into()],
                    kind: MarkKind::Override
                },
            ]
        );
        assert_eq!(
            one("a: !!str 10\nb: !!binary aGVsbG8=\nc: !!int \"7\"\n"),
            json!({"a": "10", "b": "hello", "c": 7})
        );
        let e = refused("a: !custom 1\n");
        assert!(e.what.contains("!reset and !override"), "{e}");
        let e = refused("a: !!set {x}\n");
        assert!(e.what.contains("no meaning"), "{e}");
    }

    #[test]
    fn depth_is_bounded_as_events_arrive() {
        // As deep as a file within the import's bound (8 MiB) can nest
        // by indentation: refused at the 65th line, not at its end. (One
        // 100,000 deep was 5 GB of text, ten seconds of a debug test.)
        let deep = "a:\n".to_owned()
            + &(1..4_000)
                .map(|i| format!("{}a:\n", " ".repeat(i)))
                .collect::<String>();
        assert!(deep.len() as u64 <= crate::compose::input::MAX_FILE_BYTES);
        let e = refused(&deep);
        assert!(e.what.contains("deeper than 64"), "{e}");
        assert_eq!(e.line, 65);
        let flow = "[".repeat(100_000);
        assert!(documents(&flow).is_err());
    }

    #[test]
    fn alias_expansion_is_bounded_in_bytes() {
        let big = "x".repeat(1 << 20);
        let text = format!(
            "a: &a \"{big}\"\nb: [{}]\n",
            (0..200).map(|_| "*a").collect::<Vec<_>>().join(", ")
        );
        let e = refused(&text);
        assert!(e.what.contains("expand past 8 MiB"), "{e}");
        assert_eq!(e.line, 2);
        // A billion laughs, nested.
        let mut lol = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n".to_owned();
        for i in 1..12 {
            lol += &format!(
                "a{i}: &a{i} [{}]\n",
                (0..10)
                    .map(|_| format!("*a{}", i - 1))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        assert!(refused(&lol).what.contains("expand past"));
    }

    #[test]
    fn errors_never_quote_the_text() {
        let secret = "root:$6$saltsalt$hashhashhash:19000:0:99999:7:::";
        for text in [
            format!("{secret}\n  - [\n"),
            format!("a: 1\n{secret}: [\n"),
            format!("a: \"{secret}\n"),
            format!("a: !{secret} 1\n"),
            format!("{secret}: 1\n{secret}: 2\n"),
        ] {
            let e = refused(&text);
            assert!(!e.to_string().contains("saltsalt"), "{e}");
        }
    }

    #[test]
    fn several_documents_are_read_in_order() {
        let docs = documents("a: 1\n---\na: 2\n").unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[1].value, json!({"a": 2}));
    }
}
