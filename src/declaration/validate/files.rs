//! Reading a file or a directory resource: its path on the host, its
//! content (text or base64), its mode and owner.

use crate::declaration::hints::Fields;
use serde_json::Value;

use super::entry::{Entry, Kind};
use super::fields::{check, refuse_unknown, require, take, written_path, Sink};
use crate::declaration::base64;
use crate::declaration::model::{Directory, File};
use crate::declaration::raw::{kind_of, Field, RawDirectory, RawFile};
use crate::declaration::types::{Mode, Owner};

fn read_mode(s: &mut Sink, value: Field<Value>, default: Mode) -> Option<Mode> {
    match take(s, "mode", value) {
        None => Some(default),
        Some(Value::String(text)) => check(s, "mode", Mode::try_from(text.as_str())),
        Some(Value::Number(n)) => {
            s.at(
                "mode",
                format!("must be an octal string such as \"0644\", found the number {n} (JSON numbers are decimal)"),
            );
            None
        }
        Some(other) => {
            s.at(
                "mode",
                format!(
                    "must be an octal string such as \"0644\", found {}",
                    kind_of(&other)
                ),
            );
            None
        }
    }
}

fn read_owner(s: &mut Sink, value: Field<String>) -> Option<Option<Owner>> {
    match take(s, "owner", value) {
        None => Some(None),
        Some(text) => check(s, "owner", Owner::try_from(text.as_str())).map(Some),
    }
}

pub(super) fn read_file(s: &mut Sink, f: RawFile, entry: &mut Entry) -> Option<File> {
    refuse_unknown(s, "", f.unknown, Fields::Resource("file"));
    let path = require(s, "path", f.path).and_then(|p| written_path(s, "path", &p));
    entry.kind = Kind::File(path.clone());
    let content = match (f.content, f.content_base64) {
        (Field::Absent, Field::Absent) => {
            s.at(
                "content",
                "missing: give content (UTF-8 text) or content-base64",
            );
            None
        }
        (text, Field::Absent) => take(s, "content", text).map(String::into_bytes),
        (Field::Absent, encoded) => take(s, "content-base64", encoded)
            .and_then(|e| check(s, "content-base64", base64::decode(&e))),
        (_, _) => {
            s.at(
                "content",
                "content and content-base64 are exclusive: give one of them",
            );
            None
        }
    };
    let mode = read_mode(s, f.mode, Mode::FILE_DEFAULT);
    let owner = read_owner(s, f.owner);
    Some(File {
        path: path?,
        content: content?,
        mode: mode?,
        owner: owner?,
    })
}

pub(super) fn read_directory(
    s: &mut Sink,
    d: RawDirectory,
    entry: &mut Entry,
) -> Option<Directory> {
    refuse_unknown(s, "", d.unknown, Fields::Resource("directory"));
    let path = require(s, "path", d.path).and_then(|p| written_path(s, "path", &p));
    entry.kind = Kind::Directory(path.clone());
    let mode = read_mode(s, d.mode, Mode::DIRECTORY_DEFAULT);
    let owner = read_owner(s, d.owner);
    Some(Directory {
        path: path?,
        mode: mode?,
        owner: owner?,
    })
}
