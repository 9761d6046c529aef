//! The shipped Grafana dashboard's queries, checked against the metrics a
//! daemon really wrote: each parses (`promtool check rules`, every query a
//! recording rule), names only series the daemon wrote, and returns data
//! from a real Prometheus (Debian's 2.42, from the same package as
//! `promtool`) scraping that very text with the shipped alert rules
//! loaded. Runs on the machine, not in the node: Prometheus, curl and a
//! loopback HTTP server that serves the text.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use super::wait_for;

/// The dashboard as shipped.
pub const DASHBOARD: &str = include_str!("../../packaging/grafana/mesh-host.json");

/// Grafana's variables, as a query sees them with every node and step
/// picked.
const VARIABLES: [(&str, &str); 5] = [
    ("$__rate_interval", "1m"),
    ("$__interval", "1m"),
    ("$__range", "1d"),
    ("$instance", ".*"),
    ("$step", ".*"),
];

/// Every query of the dashboard: its panels' targets (rows' nested panels
/// too) and its variables' `label_values(QUERY, label)`, variables put in.
pub fn queries() -> Vec<String> {
    let dash: Value = serde_json::from_str(DASHBOARD).expect("the dashboard is JSON");
    let mut out = Vec::new();
    let mut panels: Vec<&Value> = dash["panels"].as_array().expect("panels").iter().collect();
    while let Some(p) = panels.pop() {
        panels.extend(p["panels"].as_array().into_iter().flatten());
        for t in p["targets"].as_array().into_iter().flatten() {
            out.push(t["expr"].as_str().expect("a target's expr").to_string());
        }
    }
    for v in dash["templating"]["list"].as_array().into_iter().flatten() {
        if let Some(q) = v["query"]["query"].as_str() {
            let inner = q
                .strip_prefix("label_values(")
                .and_then(|r| r.rsplit_once(','))
                .map(|(q, _)| q)
                .unwrap_or_else(|| panic!("a variable query Prometheus reads: {q}"));
            out.push(inner.to_string());
        }
    }
    out.into_iter()
        .map(|q| {
            VARIABLES
                .iter()
                .fold(q, |q, (var, value)| q.replace(var, value))
        })
        .collect()
}

/// The metric names a query names: its `mesh_host_*` identifiers.
pub fn names(query: &str) -> Vec<String> {
    let mut out = Vec::new();
    let bytes = query.as_bytes();
    let mut i = 0;
    while let Some(at) = query[i..].find("mesh_host_") {
        let start = i + at;
        let mut end = start;
        while end < bytes.len() && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_') {
            end += 1;
        }
        out.push(query[start..end].to_string());
        i = end;
    }
    out
}

/// The metric names of samples in `text`.
pub fn written(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| l.split(['{', ' ']).next())
        .map(str::to_string)
        .collect()
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// A child process killed when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn curl(args: &[&str]) -> Option<Value> {
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "10"])
        .args(args)
        .output()
        .ok()?;
    serde_json::from_slice(&out.stdout).ok()
}

/// Check every query of the dashboard against `metrics` (the text a
/// daemon wrote after real fires), in `dir` (a directory of the test's).
pub fn assert_resolves(metrics: &str, dir: &Path) {
    let root = env!("CARGO_MANIFEST_DIR");
    let queries = queries();
    assert!(queries.len() >= 20, "the dashboard's queries: {queries:?}");

    // Each parses: every query a recording rule, checked by promtool.
    let rules: Vec<Value> = queries
        .iter()
        .enumerate()
        .map(|(i, q)| serde_json::json!({"record": format!("dashboard:query_{i}"), "expr": q}))
        .collect();
    let rules_file = dir.join("dashboard-rules.json");
    let doc = serde_json::json!({"groups": [{"name": "dashboard", "rules": rules}]});
    std::fs::write(&rules_file, doc.to_string()).expect("rules file");
    let out = Command::new("promtool")
        .args(["check", "rules"])
        .arg(&rules_file)
        .output()
        .expect("promtool (Debian's prometheus package)");
    assert!(
        out.status.success(),
        "promtool check rules on the dashboard's queries:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    // Each names only series the daemon wrote.
    let written = written(metrics);
    for q in &queries {
        for name in names(q) {
            assert!(
                written.contains(&name),
                "the dashboard's query names {name}, which the daemon did not write:\n{q}\n{metrics}"
            );
        }
    }

    // Each returns data from a Prometheus scraping that very text.
    let served = dir.join("served");
    std::fs::create_dir_all(&served).expect("served dir");
    std::fs::write(served.join("mesh-host.prom"), metrics).expect("served text");
    let (http_port, prom_port) = (free_port(), free_port());
    let _http = Killed(
        Command::new("python3")
            .args(["-m", "http.server", "--bind", "127.0.0.1"])
            .arg(http_port.to_string())
            .arg("--directory")
            .arg(&served)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3's http.server"),
    );
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global: {{scrape_interval: 1s, evaluation_interval: 1s}}\n\
             rule_files: ['{root}/packaging/prometheus/mesh-host-alerts.yml']\n\
             scrape_configs:\n\
             \x20 - job_name: node\n\
             \x20   metrics_path: /mesh-host.prom\n\
             \x20   static_configs: [{{targets: ['127.0.0.1:{http_port}']}}]\n"
        ),
    )
    .expect("prometheus.yml");
    let _prometheus = Killed(
        Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("tsdb").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{prom_port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus (Debian's prometheus package)"),
    );
    let api = format!("http://127.0.0.1:{prom_port}/api/v1/query");
    let query = |q: &str| curl(&[&api, "--data-urlencode", &format!("query={q}")]);
    // Three scrapes of the text: enough for every rate() and increase().
    wait_for(
        "Prometheus to scrape the daemon's text three times",
        Duration::from_secs(60),
        || {
            let v = query("count_over_time(up{job=\"node\"}[1h]) >= 3 and up{job=\"node\"} == 1")?;
            (!v["data"]["result"].as_array()?.is_empty()).then_some(())
        },
    );
    for q in &queries {
        let answer = query(q).unwrap_or_else(|| panic!("no answer from Prometheus to {q}"));
        assert_eq!(answer["status"], "success", "{q}: {answer}");
        // The alerts Prometheus raises from the shipped rules are there
        // only while one fires: that query has to parse, not to return.
        if q.starts_with("ALERTS") {
            continue;
        }
        let result = answer["data"]["result"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert!(
            !result.is_empty(),
            "no data for the dashboard's query {q}\n{metrics}"
        );
    }
}
