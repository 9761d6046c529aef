//! Typed fields read as compose reads them. After interpolation compose
//! casts a string to the type of its field (compose-go's
//! `interpolateTypeCastMapping` and its decoder's `cast`): a boolean
//! from `true`/`false` or, with a warning, `y`/`yes`/`on` and
//! `n`/`no`/`off` (case ignored); an integer from Go's `Atoi`; a float
//! from `ParseFloat`. What it cannot cast, or a value of a type the
//! compose schema does not allow there (`privileged: 1`), it refuses: so
//! does `import`, naming the field. A value that cannot be read is never
//! taken as a default, least of all for a security setting.

use serde_json::Value;

use super::problems::Problems;

/// `v` as compose reads a boolean field; `at` names it. The YAML 1.1
/// words are read with compose's warning, as a note.
pub fn boolean(p: &mut Problems, at: &str, v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::String(s) => match s.to_ascii_lowercase().as_str() {
            "true" => Some(true),
            "false" => Some(false),
            word @ ("y" | "yes" | "on" | "n" | "no" | "off") => {
                let b = matches!(word, "y" | "yes" | "on");
                p.note(
                    at,
                    format!("{s:?} read as {b}, as compose reads it (YAML 1.2 has only true and false: write {b})"),
                );
                Some(b)
            }
            _ => {
                p.refuse(
                    at,
                    format!("{s:?} is not a boolean: true or false (compose refuses it too)"),
                );
                None
            }
        },
        other => {
            p.refuse(
                at,
                format!(
                    "{} is not a boolean: true or false (compose refuses it too)",
                    shown(other)
                ),
            );
            None
        }
    }
}

/// `v` as compose reads an integer field (a YAML integer, or a string Go's
/// `Atoi` reads).
pub fn integer(p: &mut Problems, at: &str, v: &Value) -> Option<i64> {
    let read = match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => {
            let t = s.strip_prefix('+').unwrap_or(s);
            let digits = t.strip_prefix('-').unwrap_or(t);
            if !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()) {
                t.parse::<i64>().ok()
            } else {
                None
            }
        }
        _ => None,
    };
    if read.is_none() {
        p.refuse(
            at,
            format!(
                "{} is not a whole number that fits in 64 bits (compose refuses it too)",
                shown(v)
            ),
        );
    }
    read
}

/// `v` as compose reads a float field.
pub fn float(p: &mut Problems, at: &str, v: &Value) -> Option<f64> {
    let read = match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok().filter(|f| f.is_finite()),
        _ => None,
    };
    if read.is_none() {
        p.refuse(
            at,
            format!("{} is not a number (compose refuses it too)", shown(v)),
        );
    }
    read
}

/// A duration field: text only, as the compose schema has it (`10` alone
/// has no unit, and compose refuses it).
pub fn duration<'v>(p: &mut Problems, at: &str, v: &'v Value) -> Option<&'v str> {
    match v {
        Value::String(s) => Some(s),
        other => {
            p.refuse(
                at,
                format!(
                    "{} is not a duration: give one with its unit (\"30s\", \"1m30s\"), as compose wants",
                    shown(other)
                ),
            );
            None
        }
    }
}

/// A byte size field: a number, or text such as `512m`.
pub fn size(p: &mut Problems, at: &str, v: &Value) -> Option<u64> {
    let read = match v {
        Value::Number(n) => match n.as_i64() {
            Some(b) if b >= 0 => Ok(b as u64),
            Some(_) => Err(format!("{n} is below 0")),
            None => Err(format!("{n} is not a size that fits in 63 bits")),
        },
        Value::String(s) => super::units::bytes(s),
        other => Err(format!("{} is not a size", shown(other))),
    };
    read.map_err(|e| p.refuse(at, e)).ok()
}

/// A value as a message shows it: text quoted, anything else as JSON.
fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        Value::Null => "nothing (null)".into(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read<T>(
        f: impl Fn(&mut Problems, &str, &Value) -> Option<T>,
        v: Value,
    ) -> (Option<T>, Problems) {
        let mut p = Problems::default();
        let out = f(&mut p, "web: read_only", &v);
        (out, p)
    }

    #[test]
    fn booleans_cast_as_compose_casts_them() {
        for (v, want, noted) in [
            (json!(true), true, false),
            (json!("true"), true, false),
            (json!("TRUE"), true, false),
            (json!("False"), false, false),
            (json!("yes"), true, true),
            (json!("Y"), true, true),
            (json!("on"), true, true),
            (json!("no"), false, true),
            (json!("n"), false, true),
            (json!("OFF"), false, true),
        ] {
            let (b, p) = read(boolean, v.clone());
            assert_eq!(b, Some(want), "{v}");
            assert!(p.refused.is_empty(), "{v}");
            assert_eq!(p.notes.len(), usize::from(noted), "{v}: {:?}", p.notes);
        }
        for v in [
            json!(1),
            json!("1"),
            json!("enabled"),
            json!(null),
            json!([]),
        ] {
            let (b, p) = read(boolean, v.clone());
            assert_eq!(b, None, "{v}");
            assert_eq!(p.refused.len(), 1, "{v}");
            assert!(
                p.refused[0].starts_with("web: read_only: "),
                "{:?}",
                p.refused
            );
        }
    }

    #[test]
    fn integers_and_floats_cast_as_compose_casts_them() {
        assert_eq!(read(integer, json!(10)).0, Some(10));
        assert_eq!(read(integer, json!("10")).0, Some(10));
        assert_eq!(read(integer, json!("-1")).0, Some(-1));
        for bad in [
            json!("10x"),
            json!("1.5"),
            json!(1.5),
            json!(true),
            json!("99999999999999999999"),
        ] {
            assert_eq!(read(integer, bad.clone()).0, None, "{bad}");
        }
        assert_eq!(read(float, json!("1.5")).0, Some(1.5));
        assert_eq!(read(float, json!(2)).0, Some(2.0));
        assert_eq!(read(float, json!("x")).0, None);
    }

    #[test]
    fn durations_are_text_and_sizes_fit() {
        let mut p = Problems::default();
        assert_eq!(duration(&mut p, "web: x", &json!("10s")), Some("10s"));
        assert_eq!(duration(&mut p, "web: x", &json!(10)), None);
        assert!(p.refused[0].contains("with its unit"));
        assert_eq!(read(size, json!("1g")).0, Some(1 << 30));
        assert_eq!(read(size, json!(1024)).0, Some(1024));
        let (s, p) = read(size, json!(18_446_744_073_709_551_615u64));
        assert_eq!(s, None);
        assert!(p.refused[0].contains("63 bits"));
    }
}
