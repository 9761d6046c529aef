//! A YAML scalar read as compose reads it: Go's YAML library (yaml.v3,
//! and v4 which compose-go uses now) resolves a plain scalar to null, a
//! boolean, an integer (`0x`, `0o`, `0b` and a leading `0` as Go's
//! `ParseInt(s, 0, 64)` reads them, underscores ignored), a float, or
//! text: YAML 1.2's core schema, so `yes`, `on` and `y` stay text (compose
//! casts them later, where a field is a boolean). Quoted and block
//! scalars are text. Tags are applied as that library applies them:
//! `!!str`, `!!int`, `!!float`, `!!bool`, `!!null`, `!!binary`
//! (base64 decoded), `!!timestamp` (kept as text).

use base64::Engine;
use serde_json::{Number, Value};

/// A plain scalar's value, as Go's YAML library resolves it untagged.
/// `None` for a value JSON cannot hold (`.inf`, `.nan`).
pub fn plain(text: &str) -> Option<Value> {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Some(Value::Null),
        "true" | "True" | "TRUE" => return Some(Value::Bool(true)),
        "false" | "False" | "FALSE" => return Some(Value::Bool(false)),
        ".nan" | ".NaN" | ".NAN" | ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF"
        | "-.inf" | "-.Inf" | "-.INF" => return None,
        "-0" | "-0.0" => return Some(float(-0.0)),
        _ => {}
    }
    match text.as_bytes()[0] {
        b'.' => {
            if let Ok(f) = text.parse::<f64>() {
                if f.is_finite() {
                    return Some(float(f));
                }
            }
        }
        b'0'..=b'9' | b'+' | b'-' => {
            let bare: String = text.chars().filter(|c| *c != '_').collect();
            if let Some(n) = go_int(&bare) {
                return Some(n);
            }
            if yaml_float(&bare) {
                if let Ok(f) = bare.parse::<f64>() {
                    if f.is_finite() {
                        return Some(float(f));
                    }
                    return None;
                }
            }
        }
        _ => {}
    }
    Some(Value::String(text.to_owned()))
}

fn float(f: f64) -> Value {
    Number::from_f64(f).map_or(Value::Null, Value::Number)
}

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`, the float
/// form Go's YAML library accepts.
fn yaml_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i += 1;
    }
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            digits(&mut i);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// Go's `strconv.ParseInt(s, 0, 64)`, then `ParseUint(s, 0, 64)`: a sign
/// (signed only), then `0x`/`0o`/`0b` or a leading `0` (octal) or
/// decimal digits; `None` when it is not one or does not fit.
pub fn go_int(s: &str) -> Option<Value> {
    let (negative, signed, body) = match s.as_bytes().first()? {
        b'-' => (true, true, &s[1..]),
        b'+' => (false, true, &s[1..]),
        _ => (false, false, s),
    };
    let (radix, digits) =
        if let Some(d) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
            (16, d)
        } else if let Some(d) = body.strip_prefix("0o").or_else(|| body.strip_prefix("0O")) {
            (8, d)
        } else if let Some(d) = body.strip_prefix("0b").or_else(|| body.strip_prefix("0B")) {
            (2, d)
        } else if body.len() > 1 && body.starts_with('0') {
            (8, &body[1..])
        } else {
            (10, body)
        };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let magnitude = u128::from_str_radix(digits, radix).ok()?;
    if negative {
        let n = i128::try_from(magnitude).ok()?.checked_neg()?;
        i64::try_from(n).ok().map(Value::from)
    } else if let Ok(n) = i64::try_from(magnitude) {
        Some(Value::from(n))
    } else if signed {
        None
    } else {
        u64::try_from(magnitude).ok().map(Value::from)
    }
}

/// A scalar tagged `!!suffix`: the value the tag makes of `text`, or why
/// it cannot.
pub fn tagged(suffix: &str, text: &str) -> Result<Value, String> {
    let want = |kind: &str, ok: bool, v: Option<Value>| -> Result<Value, String> {
        match v {
            Some(v) if ok => Ok(v),
            _ => Err(format!("a !!{kind} scalar that is not one")),
        }
    };
    match suffix {
        "str" | "timestamp" => Ok(Value::String(text.to_owned())),
        "int" => {
            let v = plain(text);
            let ok = matches!(&v, Some(Value::Number(n)) if !n.is_f64());
            want("int", ok, v)
        }
        "float" => match plain(text) {
            Some(Value::Number(n)) => Ok(float(n.as_f64().unwrap_or_default())),
            _ => Err("a !!float scalar that is not one".into()),
        },
        "bool" => {
            let v = plain(text);
            let ok = matches!(v, Some(Value::Bool(_)));
            want("bool", ok, v)
        }
        "null" => {
            let v = plain(text);
            let ok = matches!(v, Some(Value::Null));
            want("null", ok, v)
        }
        "binary" => {
            let bare: String = text.chars().filter(|c| !c.is_whitespace()).collect();
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(bare)
                .map_err(|_| "a !!binary scalar that is not base64".to_owned())?;
            String::from_utf8(bytes).map(Value::String).map_err(|_| {
                "a !!binary scalar that is not text: a compose field holds text".to_owned()
            })
        }
        _ => Err(format!(
            "the tag !!{suffix} has no meaning on a scalar of a compose file"
        )),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn plain_scalars_resolve_as_go_s_yaml_library_resolves_them() {
        for (text, want) in [
            ("", json!(null)),
            ("~", json!(null)),
            ("true", json!(true)),
            ("FALSE", json!(false)),
            ("yes", json!("yes")),
            ("on", json!("on")),
            ("y", json!("y")),
            ("12", json!(12)),
            ("-12", json!(-12)),
            ("+12", json!(12)),
            ("1_000", json!(1000)),
            ("0o1777", json!(1023)),
            ("01777", json!(1023)),
            ("0x1F", json!(31)),
            ("0b101", json!(5)),
            ("0", json!(0)),
            ("18446744073709551615", json!(18_446_744_073_709_551_615u64)),
            ("1.5", json!(1.5)),
            (".5", json!(0.5)),
            ("1e3", json!(1000.0)),
            ("18446744073709551616", json!(18_446_744_073_709_551_616.0)),
            ("08", json!(8.0)),
            ("1.2.3", json!("1.2.3")),
            ("10s", json!("10s")),
            ("-", json!("-")),
            ("2001-12-14", json!("2001-12-14")),
        ] {
            assert_eq!(plain(text), Some(want), "{text:?}");
        }
        assert_eq!(plain(".inf"), None);
        assert_eq!(plain("-.INF"), None);
    }

    #[test]
    fn tags_make_what_go_s_yaml_library_makes() {
        assert_eq!(tagged("str", "12"), Ok(json!("12")));
        assert_eq!(tagged("int", "12"), Ok(json!(12)));
        assert!(tagged("int", "x").is_err());
        assert_eq!(tagged("float", "1"), Ok(json!(1.0)));
        assert_eq!(tagged("bool", "true"), Ok(json!(true)));
        assert!(tagged("bool", "yes").is_err());
        assert_eq!(tagged("binary", "aGVs\n bG8="), Ok(json!("hello")));
        assert!(tagged("binary", "//79").unwrap_err().contains("not text"));
        assert!(tagged("binary", "***").unwrap_err().contains("base64"));
        assert!(tagged("set", "x").unwrap_err().contains("!!set"));
    }
}
