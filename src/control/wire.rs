//! A request as it travels on the socket: its JSON object, and for
//! `apply` and `diff` the declaration's bytes after it, raw, following one
//! line break, rather than inside it as a JSON string. At 20,000 steps a
//! 7 MB declaration cost the command line 24 ms to escape and the daemon
//! about as much to read back, on every apply.
//!
//! A request of the older form (the declaration inside its JSON, nothing
//! after it) is read as ever. A daemon older than this form refuses one
//! with bytes after its JSON (serde's "trailing characters"): the client
//! then sends it again in the older form ([`refused_as_attached`]).

use super::Request;

/// The bytes of `request`; `attached`: its declaration after its JSON,
/// raw (a request that carries none is its JSON alone either way).
pub fn encode(request: &Request, attached: bool) -> serde_json::Result<Vec<u8>> {
    let (header, declaration) = match (request, attached) {
        (
            Request::Apply {
                declaration,
                allow_empty,
                progress,
                every_line,
            },
            true,
        ) => (
            Request::Apply {
                declaration: String::new(),
                allow_empty: *allow_empty,
                progress: *progress,
                every_line: *every_line,
            },
            declaration,
        ),
        (
            Request::Diff {
                declaration,
                allow_empty,
            },
            true,
        ) => (
            Request::Diff {
                declaration: String::new(),
                allow_empty: *allow_empty,
            },
            declaration,
        ),
        _ => return serde_json::to_vec(request),
    };
    let mut bytes = serde_json::to_vec(&header)?;
    bytes.reserve(1 + declaration.len());
    bytes.push(b'\n');
    bytes.extend_from_slice(declaration.as_bytes());
    Ok(bytes)
}

/// The request `bytes` hold, in either form; why not, naming no byte of
/// what was sent.
pub fn decode(mut bytes: Vec<u8>) -> Result<Request, String> {
    let mut values = serde_json::Deserializer::from_slice(&bytes).into_iter::<Request>();
    let mut request = match values.next() {
        Some(Ok(r)) => r,
        Some(Err(e)) => return Err(format!("malformed request: {e}")),
        None => return Err("malformed request: empty".into()),
    };
    let end = values.byte_offset();
    let rest = &bytes[end..];
    let slot = match &mut request {
        Request::Apply { declaration, .. } | Request::Diff { declaration, .. }
            if declaration.is_empty() && rest.first() == Some(&b'\n') =>
        {
            declaration
        }
        _ if rest.iter().all(u8::is_ascii_whitespace) => return Ok(request),
        _ => {
            return Err(format!(
                "malformed request: {} byte(s) after it that it does not take",
                rest.len()
            ))
        }
    };
    // The buffer becomes the declaration: no second copy of megabytes.
    bytes.drain(..=end);
    *slot = String::from_utf8(bytes)
        .map_err(|e| format!("malformed request: its declaration is not UTF-8 ({e})"))?;
    Ok(request)
}

/// Whether `refusal` is a daemon older than [`encode`]'s attached form
/// refusing one: serde's words for bytes after a JSON value.
pub fn refused_as_attached(refusal: &str) -> bool {
    refusal.contains("malformed request") && refusal.contains("trailing characters")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn apply(declaration: &str) -> Request {
        Request::Apply {
            declaration: declaration.into(),
            allow_empty: true,
            progress: false,
            every_line: true,
        }
    }

    #[test]
    fn a_declaration_travels_raw_after_the_json_and_reads_back_whole() {
        let text = "[{\"id\": \"web\", \"note\": \"a \\\"quote\\\"\\nand a line\"}]\n";
        let sent = encode(&apply(text), true).expect("encodes");
        let (json, raw) = sent.split_at(sent.iter().position(|b| *b == b'\n').expect("a break"));
        assert!(serde_json::from_slice::<Request>(json).is_ok());
        assert_eq!(&raw[1..], text.as_bytes(), "the bytes as they are");
        assert_eq!(decode(sent).expect("decodes"), apply(text));
        let diff = Request::Diff {
            declaration: text.into(),
            allow_empty: false,
        };
        assert_eq!(
            decode(encode(&diff, true).expect("encodes")).expect("decodes"),
            diff
        );
    }

    #[test]
    fn the_older_form_reads_as_ever_and_a_request_without_a_declaration_is_its_json() {
        let inline = serde_json::to_vec(&apply("[]")).expect("encodes");
        assert_eq!(encode(&apply("[]"), false).expect("encodes"), inline);
        assert_eq!(decode(inline).expect("decodes"), apply("[]"));
        let status = Request::Status {
            brief: true,
            only: None,
        };
        let sent = encode(&status, true).expect("encodes");
        assert_eq!(sent, serde_json::to_vec(&status).expect("encodes"));
        let mut with_break = sent.clone();
        with_break.extend_from_slice(b" \n");
        assert_eq!(decode(with_break).expect("whitespace after"), status);
    }

    #[test]
    fn bytes_after_a_request_that_takes_none_are_refused_without_echoing_them() {
        let mut sent = serde_json::to_vec(&apply("[]")).expect("encodes");
        sent.extend_from_slice(b"\nSECRET-CONTENT");
        let why = decode(sent).expect_err("the declaration is inline already");
        assert!(why.contains("15 byte(s) after it"), "{why}");
        assert!(!why.contains("SECRET"), "{why}");
        let mut sent = serde_json::to_vec(&Request::Status {
            brief: false,
            only: None,
        })
        .expect("encodes");
        sent.extend_from_slice(b"\n[]");
        assert!(decode(sent).is_err());
        let mut sent = encode(&apply(""), true).expect("encodes");
        sent.extend_from_slice(&[0xff, 0xfe]);
        let why = decode(sent).expect_err("not UTF-8");
        assert!(why.contains("not UTF-8"), "{why}");
        assert!(decode(Vec::new()).is_err());
    }

    #[test]
    fn an_older_daemon_s_refusal_of_the_attached_form_is_known() {
        // What a daemon that reads with `serde_json::from_slice` says.
        let sent = encode(&apply("[]"), true).expect("encodes");
        let e = serde_json::from_slice::<Request>(&sent).expect_err("trailing");
        assert!(refused_as_attached(&format!("malformed request: {e}")));
        assert!(!refused_as_attached("malformed request: EOF while parsing"));
    }

    proptest! {
        #[test]
        fn any_declaration_reads_back_as_sent_in_either_form(
            text in any::<String>(),
            attached in any::<bool>(),
            diff in any::<bool>(),
        ) {
            let request = if diff {
                Request::Diff { declaration: text.clone(), allow_empty: attached }
            } else {
                apply(&text)
            };
            let sent = encode(&request, attached).expect("encodes");
            prop_assert_eq!(decode(sent).expect("decodes"), request);
        }

        #[test]
        fn any_bytes_are_read_or_refused_never_a_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = decode(bytes);
        }
    }
}
