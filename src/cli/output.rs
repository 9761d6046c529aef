//! Printing results as text or JSON.

/// Print `value` as pretty JSON on stdout.
pub fn print_json<T: serde::Serialize>(value: &T) {
    match serde_json::to_string_pretty(value) {
        Ok(s) => println!("{s}"),
        Err(e) => eprintln!("mesh-host: cannot encode the result as JSON: {e}"),
    }
}
