//! Commands answered by the daemon over its control socket.

use super::local::block_on;
use super::output::print_json;
use super::Cli;
use crate::control::{client, Request};

/// Send `request` to the daemon, print its answer, return its exit code.
pub fn call(cli: &Cli, request: &Request, json: bool) -> u8 {
    block_on(async {
        match client::call(&cli.control_socket, request).await {
            Ok(response) => {
                if json {
                    print_json(&response.json);
                } else {
                    print!("{}", response.text);
                    if !response.text.ends_with('\n') {
                        println!();
                    }
                }
                response.exit
            }
            Err(e) => {
                eprintln!("mesh-host: {e}");
                super::EXIT_FAILED
            }
        }
    })
}

/// The daemon's status (as its JSON answer) for humans.
pub fn render_status(status: &serde_json::Value) -> String {
    let mut out = String::new();
    match status.get("last-apply") {
        Some(serde_json::Value::Object(last)) => out.push_str(&format!(
            "last apply: {}: {}\n",
            last.get("at").and_then(|v| v.as_str()).unwrap_or("?"),
            last.get("summary").and_then(|v| v.as_str()).unwrap_or("")
        )),
        _ => out.push_str("last apply: none yet\n"),
    }
    let windows = status
        .get("open-windows")
        .and_then(|v| v.as_array())
        .cloned()
        .unwrap_or_default();
    if windows.is_empty() {
        out.push_str("open windows: none\n");
    }
    for w in windows {
        let held: Vec<String> = w
            .get("held")
            .and_then(|h| h.as_array())
            .map(|a| {
                a.iter()
                    .filter(|c| c.get("was-running").and_then(|r| r.as_bool()) == Some(true))
                    .filter_map(|c| c.get("name").and_then(|n| n.as_str()).map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        let owed = if w.get("owed").and_then(|v| v.as_bool()) == Some(true) {
            " (OWED: the container runtime did not answer; the daemon starts them as soon as it does)"
        } else {
            ""
        };
        out.push_str(&format!(
            "OPEN WINDOW: {} since {}, holding {}{owed}\n",
            w.get("step").and_then(|v| v.as_str()).unwrap_or("?"),
            w.get("opened-at").and_then(|v| v.as_str()).unwrap_or("?"),
            if held.is_empty() {
                "nothing".to_string()
            } else {
                held.join(", ")
            }
        ));
    }
    let steps = status
        .get("steps")
        .and_then(|v| v.as_array())
        .cloned()
        .unwrap_or_default();
    for s in steps {
        let get = |k: &str| s.get(k).and_then(|v| v.as_str()).unwrap_or("-").to_string();
        out.push_str(&format!(
            "step {} ({} {}): next {}; last {} ({}); last success {}{}\n",
            get("step"),
            get("schedule"),
            get("zone"),
            get("next-fire"),
            get("last-outcome"),
            get("last-run"),
            get("last-success"),
            if s.get("running").and_then(|v| v.as_bool()) == Some(true) {
                "; RUNNING"
            } else {
                ""
            }
        ));
    }
    out
}
