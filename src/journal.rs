//! Entries written to journald's native socket, as `sd_journal_send(3)`
//! writes them: one datagram of `FIELD=value` lines (a value holding a
//! newline in the binary form: the name, a newline, its length as 64-bit
//! little-endian, the bytes, a newline). What mesh-host writes this way is
//! a step's output it forwards (src/schedule/forward.rs), under the
//! identifier and fields of that output rather than its own events'.

use std::io;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};

/// journald's native socket.
pub const SOCKET: &str = "/run/systemd/journal/socket";

/// The longest value sent in one entry: a longer line is cut into parts
/// (as Docker's journald driver cuts at 16 KiB), so that a datagram always
/// fits the socket's limits.
pub const MAX_VALUE: usize = 16 * 1024;

/// A connection to journald's native socket.
#[derive(Debug)]
pub struct Journal {
    socket: UnixDatagram,
    path: PathBuf,
}

impl Journal {
    /// A sender to journald's socket.
    pub fn open() -> io::Result<Self> {
        Journal::to(Path::new(SOCKET))
    }

    /// A sender to the datagram socket at `path` (a test's).
    pub fn to(path: &Path) -> io::Result<Self> {
        Ok(Journal {
            socket: UnixDatagram::unbound()?,
            path: path.to_path_buf(),
        })
    }

    /// Send one entry of `fields`.
    pub fn send(&self, fields: &[(&str, &[u8])]) -> io::Result<()> {
        let datagram = encode(fields);
        self.socket.send_to(&datagram, &self.path).map(|_| ())
    }
}

/// One entry in the native protocol's form.
pub fn encode(fields: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, value) in fields {
        out.extend_from_slice(name.as_bytes());
        if value.contains(&b'\n') {
            out.push(b'\n');
            out.extend_from_slice(&(value.len() as u64).to_le_bytes());
            out.extend_from_slice(value);
        } else {
            out.push(b'=');
            out.extend_from_slice(value);
        }
        out.push(b'\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fields back from a datagram, as journald reads it.
    fn decode(mut data: &[u8]) -> Vec<(String, Vec<u8>)> {
        let mut out = Vec::new();
        while !data.is_empty() {
            let end = data.iter().position(|b| *b == b'\n').expect("a line");
            let line = &data[..end];
            if let Some(eq) = line.iter().position(|b| *b == b'=') {
                out.push((
                    String::from_utf8(line[..eq].to_vec()).expect("name"),
                    line[eq + 1..].to_vec(),
                ));
                data = &data[end + 1..];
            } else {
                let name = String::from_utf8(line.to_vec()).expect("name");
                let rest = &data[end + 1..];
                let len = u64::from_le_bytes(rest[..8].try_into().expect("length")) as usize;
                out.push((name, rest[8..8 + len].to_vec()));
                assert_eq!(rest[8 + len], b'\n');
                data = &rest[8 + len + 1..];
            }
        }
        out
    }

    #[test]
    fn an_entry_reaches_the_socket_with_its_fields_a_newline_in_binary_form() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("socket");
        let server = UnixDatagram::bind(&path).expect("bind");
        let journal = Journal::to(&path).expect("open");
        journal
            .send(&[
                ("MESSAGE", b"out 1"),
                ("MESH_STEP", b"gc"),
                ("MESH_NOTE", b"two\nlines"),
            ])
            .expect("send");
        let mut buf = vec![0u8; 4096];
        let n = server.recv(&mut buf).expect("recv");
        assert_eq!(
            decode(&buf[..n]),
            vec![
                ("MESSAGE".to_string(), b"out 1".to_vec()),
                ("MESH_STEP".to_string(), b"gc".to_vec()),
                ("MESH_NOTE".to_string(), b"two\nlines".to_vec()),
            ]
        );
    }
}
