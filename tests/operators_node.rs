//! What operators see, on the sandbox node with the daemon as a real unit:
//! the metrics textfile after real fires (checked by Prometheus' own
//! `promtool check metrics`), paging through an instance of an alert
//! template found in the journal, and readable `status` / `run` output.

mod support;

use std::process::Output;
use std::time::Duration;

use serde_json::{json, Value};
use support::daemon_unit::DaemonUnit;
use support::declare;
use support::world::World;
use support::{stdout, unique_name, wait_for, Node};

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `promtool check metrics` (Prometheus' own linter) on `text`: its output,
/// which is empty when it found no problem.
fn promtool(text: &str) -> (bool, String) {
    use std::io::Write;
    let mut child = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("promtool (Debian's prometheus package; tests/node/prereqs.sh installs it)");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("write to promtool");
    let out = child.wait_with_output().expect("promtool");
    (
        out.status.success(),
        format!("{}{}", stdout(&out), stderr(&out)),
    )
}

fn assert_promtool_clean(text: &str, what: &str) {
    let (ok, said) = promtool(text);
    assert!(
        ok && said.trim().is_empty(),
        "promtool check metrics on {what}: {said}\n{text}"
    );
}

/// The value of the sample `series` (name and labels, exactly) in `text`.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
}

/// The journal's JSON lines as values.
fn entries(journal: &str) -> Vec<Value> {
    journal
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn field<'v>(entry: &'v Value, name: &str) -> &'v str {
    entry.get(name).and_then(|v| v.as_str()).unwrap_or("")
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn metrics_are_written_after_fires_and_windows_and_pass_promtool() {
    // The textfile's directory does not exist yet: the daemon makes it.
    let mut w = World::new("metrics");
    let d = DaemonUnit::install_with_args(
        &w,
        "",
        &format!("--metrics-file {}", w.path("textfile/mesh-host.prom")),
    );
    let prom = w.path("textfile/mesh-host.prom");
    let svc = w.name("svc");
    // Step ids name transient units, node-wide: unique ones.
    let gc = w.name("gc");
    let bad = w.name("bad");
    let img = w.busybox();
    // Lasts a few seconds, so the open window is seen in the metrics; a
    // memory limit, so its peak is seen against it.
    let mut gc_step = declare::step(&gc, &gc, &img, "sleep 3", &["svc"], 300);
    gc_step["memory"] = json!(256 << 20);
    w.write_declaration(json!([
        declare::service("svc", &svc, &img),
        gc_step,
        declare::step(&bad, &bad, &img, "exit 3", &[], 300),
    ]));
    let gc_labels = format!("{{step=\"{gc}\",module=\"m\"}}");
    let bad_labels = format!("{{step=\"{bad}\",module=\"m\"}}");
    d.start();

    // Written after the first apply, before any fire.
    let first = wait_for("the metrics file", Duration::from_secs(30), || {
        std::fs::read_to_string(&prom).ok()
    });
    assert_promtool_clean(&first, "the first metrics file");
    assert_eq!(sample(&first, "mesh_host_apply_ok"), Some(1.0), "{first}");
    assert!(sample(&first, "mesh_host_apply_last_success_timestamp_seconds").is_some());
    assert!(sample(
        &first,
        &format!("mesh_host_step_next_fire_timestamp_seconds{gc_labels}")
    )
    .is_some());
    let meta = std::fs::metadata(&prom).expect("metrics file");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(meta.permissions().mode() & 0o777, 0o644);

    // During the window: the window is open and holds one container.
    let run = d.cli_spawn(&["run", &gc]);
    let during = wait_for(
        "the open window in the metrics",
        Duration::from_secs(30),
        || {
            let t = std::fs::read_to_string(&prom).ok()?;
            (sample(&t, &format!("mesh_host_window_open{{step=\"{gc}\"}}")) == Some(1.0))
                .then_some(t)
        },
    );
    assert_eq!(
        sample(&during, "mesh_host_held_containers"),
        Some(1.0),
        "{during}"
    );
    assert!(
        sample(
            &during,
            &format!("mesh_host_window_bound_seconds{{step=\"{gc}\"}}")
        ) == Some(600.0)
    );
    assert_promtool_clean(&during, "the metrics during a window");
    let out = run.wait_with_output().expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));

    // After the fire: last success, exit status, duration, the count.
    let after = wait_for("the fire in the metrics", Duration::from_secs(30), || {
        let t = std::fs::read_to_string(&prom).ok()?;
        let series = format!(
            "mesh_host_step_fires_total{{step=\"{gc}\",module=\"m\",outcome=\"succeeded\"}}"
        );
        (sample(&t, &series) == Some(1.0)).then_some(t)
    });
    assert_promtool_clean(&after, "the metrics after a fire");
    let labels = &gc_labels;
    let success = sample(
        &after,
        &format!("mesh_host_step_last_success_timestamp_seconds{labels}"),
    )
    .expect("last success");
    let now = chrono::Utc::now().timestamp() as f64;
    assert!(success > now - 120.0 && success <= now + 1.0, "{success}");
    assert_eq!(
        sample(&after, &format!("mesh_host_step_last_exit_status{labels}")),
        Some(0.0)
    );
    let took = sample(
        &after,
        &format!("mesh_host_step_last_run_duration_seconds{labels}"),
    )
    .expect("duration");
    assert!(took >= 3.0, "the step slept 3 s: {took}");
    assert_eq!(
        sample(&after, &format!("mesh_host_window_open{{step=\"{gc}\"}}")),
        Some(0.0)
    );
    assert_eq!(sample(&after, "mesh_host_held_containers"), Some(0.0));

    // A failing step: its exit status and a failed fire.
    let out = d.cli_with_state(&["run", &bad]);
    assert_eq!(out.status.code(), Some(1));
    let failed = wait_for(
        "the failed fire in the metrics",
        Duration::from_secs(30),
        || {
            let t = std::fs::read_to_string(&prom).ok()?;
            let series = format!(
                "mesh_host_step_fires_total{{step=\"{bad}\",module=\"m\",outcome=\"failed\"}}"
            );
            (sample(&t, &series) == Some(1.0)).then_some(t)
        },
    );
    assert_eq!(
        sample(
            &failed,
            &format!("mesh_host_step_last_exit_status{bad_labels}")
        ),
        Some(3.0)
    );
    assert!(!failed.contains(&format!(
        "mesh_host_step_last_success_timestamp_seconds{bad_labels}"
    )));

    // `mesh-host metrics` prints the same text, from the daemon and local.
    let out = d.cli_with_state(&["metrics"]);
    assert_eq!(out.status.code(), Some(0));
    let printed = stdout(&out);
    assert_promtool_clean(&printed, "mesh-host metrics");
    assert_eq!(printed, std::fs::read_to_string(&prom).expect("file"));
    let out = d.cli_with_state(&["metrics", "--local"]);
    assert_eq!(out.status.code(), Some(0));
    let local = stdout(&out);
    assert_promtool_clean(&local, "mesh-host metrics --local");
    assert!(local.contains(&format!("mesh_host_step_last_exit_status{bad_labels} 3\n")));
    let succeeded = format!(
        "mesh_host_step_fires_total{{step=\"{gc}\",module=\"m\",outcome=\"succeeded\"}} 1\n"
    );
    assert!(local.contains(&succeeded), "{local}");

    // What the fires used, in the histograms and gauges.
    assert!(
        sample(
            &local,
            &format!("mesh_host_step_cpu_seconds_count{gc_labels}")
        ) == Some(1.0),
        "{local}"
    );
    assert_eq!(
        sample(
            &local,
            &format!("mesh_host_step_memory_limit_bytes{gc_labels}")
        ),
        Some(268_435_456.0)
    );

    // Counters survive a restart of the daemon.
    d.restart();
    let out = d.cli_with_state(&["metrics"]);
    assert!(stdout(&out).contains(&succeeded), "{}", stdout(&out));

    // The shipped dashboard's queries resolve against these very metrics.
    support::dashboard::assert_resolves(&stdout(&out), &w.dir);
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_failing_step_pages_through_one_instance_of_the_alert_template_after_its_window() {
    let node = Node::from_env();
    let template_prefix = unique_name("page-alert");
    let template = format!("{template_prefix}@.service");
    let mut w = World::new("page");
    let d =
        DaemonUnit::install_with_args(&w, "", &format!("--metrics-file= --on-alert {template}"));
    // The test alert template: reads its event back from the journal as
    // documented, keeps it in a file, says its instance, and lingers until
    // the test releases it (two minutes at most), so that a second alert
    // finds it still running however slow the machine.
    let pages = w.path("pages");
    std::fs::create_dir_all(&pages).expect("pages dir");
    let unit_text = format!(
        "[Service]\nType=oneshot\nExecStart=/bin/sh -c 'for i in 1 2 3 4 5 6 7 8 9 10; do \
         e=$$(journalctl -o json -n 1 --no-pager \"MESH_ALERT_UNIT=$$1\"); [ -n \"$$e\" ] && break; sleep 1; done; \
         printf \"%%s\\n\" \"$$e\" >>{pages}/page.json; echo \"paged for $$2\"; \
         n=0; while [ ! -e {pages}/release ] && [ $$n -lt 600 ]; do sleep 0.2; n=$$((n+1)); done' sh %n %I\n"
    );
    std::fs::write(
        format!("/proc/{}/root/run/systemd/system/{template}", node.pid()),
        unit_text,
    )
    .expect("template");
    let _template = node.on_drop(format!(
        "systemctl stop '{template_prefix}@*' ; rm -f /run/systemd/system/{template}; systemctl daemon-reload"
    ));
    node.sh_ok("systemctl daemon-reload");
    let svc = w.name("svc");
    let bad = w.name("bad");
    let img = w.busybox();
    w.write_declaration(json!([
        declare::service("svc", &svc, &img),
        declare::step(&bad, &bad, &img, "sleep 1; exit 3", &["svc"], 300),
    ]));
    d.start();

    let out = d.cli_with_state(&["run", &bad]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    // systemd-escape 'step-failed:<step>:<page id>' (a step id's dashes
    // too): the daemon's page entry names it.
    let instance = page_instance(&d, "step-failed", &bad);
    let kind = format!(
        "{template_prefix}@step\\x2dfailed:{}:",
        bad.replace('-', "\\x2d")
    );
    assert!(instance.starts_with(&kind), "{instance}");
    let said = wait_for("the alert instance to run", Duration::from_secs(30), || {
        let j = node.journal(&["-b", "-u", &instance, "-o", "cat"]);
        j.contains(&format!("paged for step-failed:{bad}"))
            .then_some(j)
    });
    assert!(
        said.contains(&format!("paged for step-failed:{bad}")),
        "{said}"
    );

    // It found the event's fields in the journal by its own name.
    let page_file = format!("{pages}/page.json");
    let page: Value = wait_for("the page's journal entry", Duration::from_secs(15), || {
        let text = std::fs::read_to_string(&page_file).ok()?;
        serde_json::from_str(text.lines().next()?).ok()
    });
    assert_eq!(field(&page, "MESH_ALERT_UNIT"), instance);
    assert_eq!(field(&page, "MESH_ALERT_EVENT"), "step-failed");
    assert_eq!(field(&page, "MESH_STEP"), bad);
    assert_eq!(field(&page, "MESH_EXIT_STATUS"), "3");
    assert_eq!(
        field(&page, "MESH_MODULE"),
        "m",
        "the step's module: {page}"
    );
    assert!(field(&page, "MESSAGE").contains(&bad), "{page}");

    // It was started only after the step's window had closed.
    let closed = entries(&d.unit_journal(&[
        "-o",
        "json",
        "MESH_EVENT=window-closed",
        &format!("MESH_STEP={bad}"),
    ]));
    let closed_at: u64 = field(
        closed.first().expect("window-closed"),
        "__REALTIME_TIMESTAMP",
    )
    .parse()
    .expect("timestamp");
    let paged_at: u64 = field(&page, "__REALTIME_TIMESTAMP")
        .parse()
        .expect("timestamp");
    assert!(
        paged_at >= closed_at,
        "paged at {paged_at}, window closed at {closed_at}"
    );

    // A second failure while the instance still runs starts no second one.
    assert_eq!(node.unit_property(&instance, "ActiveState"), "activating");
    let out = d.cli_with_state(&["run", &bad]);
    assert_eq!(out.status.code(), Some(1));
    let skipped = wait_for(
        "the second page to be held back",
        Duration::from_secs(30),
        || {
            let j = d.unit_journal(&["-o", "cat"]);
            j.contains("is still running for an earlier step-failed")
                .then_some(j)
        },
    );
    assert!(skipped.contains(&instance), "{skipped}");
    std::fs::write(format!("{pages}/release"), "").expect("release the instance");
    wait_for("the instance to end", Duration::from_secs(30), || {
        (node.unit_property(&instance, "ActiveState") != "activating").then_some(())
    });
    let ran = node.journal(&["-b", "-u", &format!("{template_prefix}@*"), "-o", "cat"]);
    assert_eq!(
        ran.matches(&format!("paged for step-failed:{bad}")).count(),
        1,
        "{ran}"
    );
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn status_and_run_show_readable_times_and_log_lines_are_sentences() {
    let mut w = World::new("readable");
    let svc = w.name("svc");
    let gc = w.name("gc");
    let img = w.busybox();
    let d = DaemonUnit::started_with_args(
        &w,
        "--metrics-file=",
        json!([
            declare::service("svc", &svc, &img),
            declare::step(&gc, &gc, &img, "true", &["svc"], 300),
        ]),
    );
    let utc = regex_like_utc_time;

    let out = d.cli_with_state(&["run", &gc]);
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    assert!(
        text.lines().any(|l| l.starts_with("  fired: ") && utc(l)),
        "{text}"
    );
    assert!(!has_rfc3339(&text), "{text}");

    let out = d.cli_with_state(&["status"]);
    let text = stdout(&out);
    // The node's declaration comes first, then the last apply.
    assert!(text.starts_with("declaration: "), "{text}");
    let last_apply = text
        .lines()
        .find(|l| l.starts_with("last apply: "))
        .unwrap_or_default();
    assert!(utc(last_apply), "{text}");
    let step_line = text
        .lines()
        .find(|l| l.starts_with(&format!("step {gc}")))
        .expect("step line");
    assert!(
        step_line.contains("; last success ") && utc(step_line),
        "{step_line}"
    );
    assert!(!has_rfc3339(&text), "{text}");
    let json: Value =
        serde_json::from_str(&stdout(&d.cli_with_state(&["status", "--json"]))).expect("json");
    assert!(
        json["steps"][0]["last-success"]
            .as_str()
            .is_some_and(|t| t.contains('T')),
        "--json keeps RFC 3339: {json}"
    );

    let out = d.cli_with_state(&["status", "--local"]);
    assert!(!has_rfc3339(&stdout(&out)), "{}", stdout(&out));

    // A local apply logs to the journal with fields, and to stderr in
    // sentences: no MESH_* field is printed to the operator.
    let out = d.cli_with_state(&["apply", "--local", &w.path("declaration.json")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("mesh-host: apply finished"), "{err}");
    assert!(
        !err.contains("MESH_") && !err.contains("MESSAGE_ID"),
        "{err}"
    );
    // The no-op apply says the scheduled step is unchanged.
    assert!(
        stdout(&out)
            .lines()
            .any(|l| l.trim() == format!("{gc} unchanged")),
        "{}",
        stdout(&out)
    );
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn status_of_many_steps_lists_the_next_due_and_those_to_be_seen_and_steps_lists_all() {
    let mut w = World::new("manysteps");
    let img = w.busybox();
    // 25 steps due at minutes 0..25 of an hour twelve hours away: the ten
    // due first are 0..10, whatever the time the test runs.
    let hour = (chrono::Utc::now()
        .format("%H")
        .to_string()
        .parse::<u32>()
        .expect("hour")
        + 12)
        % 24;
    let ids: Vec<String> = (0..25).map(|i| w.name(&format!("s{i}"))).collect();
    let steps: Vec<Value> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let mut step = declare::step(
                id,
                id,
                &img,
                if i == 20 { "exit 1" } else { "true" },
                &[],
                60,
            );
            step["schedule"] = json!(format!("{i} {hour} * * *"));
            step
        })
        .collect();
    let d = DaemonUnit::started_with_args(&w, "--metrics-file=", Value::Array(steps));
    assert_eq!(d.cli_with_state(&["run", &ids[20]]).status.code(), Some(1));
    assert_eq!(
        d.cli_with_state(&["suspend", &ids[22]]).status.code(),
        Some(0)
    );
    let listed = |text: &str| -> Vec<String> {
        ids.iter()
            .filter(|id| text.lines().any(|l| l.starts_with(&format!("step {id} "))))
            .cloned()
            .collect()
    };
    let mut want: Vec<String> = ids[..10].to_vec();
    want.push(ids[20].clone());
    want.push(ids[22].clone());
    for local in [false, true] {
        let with = |extra: &[&str]| {
            let mut args = vec!["status"];
            if local {
                args.push("--local");
            }
            args.extend(extra);
            stdout(&d.cli_with_state(&args))
        };
        let brief = with(&[]);
        assert_eq!(listed(&brief), want, "local {local}: {brief}");
        assert!(
            brief.contains("steps: 25 scheduled, 12 listed")
                && brief.contains("mesh-host status --steps lists every one"),
            "local {local}: {brief}"
        );
        let all = with(&["--steps"]);
        assert_eq!(listed(&all), ids, "local {local}: {all}");
        assert!(!all.contains("listed ("), "local {local}: {all}");
        let json: Value = serde_json::from_str(&with(&["--json"])).expect("json");
        assert_eq!(json["steps"].as_array().map(Vec::len), Some(25), "{json}");
    }
}

/// Whether `line` holds a time written `YYYY-MM-DD HH:MM:SS UTC`.
fn regex_like_utc_time(line: &str) -> bool {
    let b = line.as_bytes();
    (0..b.len().saturating_sub(22)).any(|i| {
        let w = &b[i..i + 23];
        let digits = |r: std::ops::Range<usize>| w[r].iter().all(u8::is_ascii_digit);
        digits(0..4)
            && w[4] == b'-'
            && digits(5..7)
            && w[7] == b'-'
            && digits(8..10)
            && w[10] == b' '
            && digits(11..13)
            && w[13] == b':'
            && digits(14..16)
            && w[16] == b':'
            && digits(17..19)
            && &w[19..23] == b" UTC"
    })
}

/// Whether `text` holds an RFC 3339 time (`...-DDTHH:MM...`).
fn has_rfc3339(text: &str) -> bool {
    let b = text.as_bytes();
    (0..b.len().saturating_sub(5)).any(|i| {
        b[i].is_ascii_digit()
            && b[i + 1] == b'T'
            && b[i + 2].is_ascii_digit()
            && b[i + 3].is_ascii_digit()
            && b[i + 4] == b':'
    })
}

/// The instance the daemon started for its page of `event` of `step`, as
/// its page entry names it.
fn page_instance(d: &DaemonUnit, event: &str, step: &str) -> String {
    wait_for("the daemon's page entry", Duration::from_secs(30), || {
        let found = entries(&d.unit_journal(&[
            "-o",
            "json",
            &format!("MESH_ALERT_EVENT={event}"),
            &format!("MESH_STEP={step}"),
        ]));
        found
            .first()
            .map(|e| field(e, "MESH_ALERT_UNIT").to_string())
    })
}

/// Read one HTTP request from `listener`, answer 200, return its body.
/// `accepted` is told once the connection is accepted, and the request is
/// read only after `go` says so: the client (curl) waits meanwhile.
fn serve_one_post(
    listener: std::net::TcpListener,
    accepted: std::sync::mpsc::Sender<()>,
    go: std::sync::mpsc::Receiver<()>,
) -> String {
    use std::io::{BufRead, BufReader, Read, Write};
    let (stream, _) = listener.accept().expect("accept");
    let _ = accepted.send(());
    let _ = go.recv_timeout(Duration::from_secs(30));
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let mut reader = BufReader::new(stream);
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).expect("header");
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                length = v.trim().parse().expect("length");
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).expect("body");
    let mut stream = reader.into_inner();
    stream
        .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        .expect("answer");
    String::from_utf8(body).expect("utf-8 body")
}

/// The shipped template, its webhook a curl config file (0600, root's),
/// posts the daemon's own entry: not a newer one a non-root user forged
/// with the same fields (`logger --journald`, run as the instance's own
/// dynamic user just before it reads the journal), and with the URL in no
/// process's argument list.
#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn the_shipped_alert_template_posts_the_event_to_its_webhook() {
    let node = Node::from_env();
    // The node shares the machine's loopback: the webhook is this test.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
    let port = listener.local_addr().expect("addr").port();
    let (accepted_tx, accepted) = std::sync::mpsc::channel();
    let (go, go_rx) = std::sync::mpsc::channel();
    let received = std::thread::spawn(move || serve_one_post(listener, accepted_tx, go_rx));

    let template_prefix = unique_name("hook-alert");
    let template = format!("{template_prefix}@.service");
    let mut w = World::new("hook");
    let d =
        DaemonUnit::install_with_args(&w, "", &format!("--metrics-file= --on-alert {template}"));
    let url = format!("http://127.0.0.1:{port}/hook-secret-token");
    let webhook = w.path("alert.curl");
    std::fs::write(&webhook, format!("url = \"{url}\"\n")).expect("curl config");
    node.sh_ok(&format!("chown root:root {webhook}; chmod 0600 {webhook}"));
    // The shipped template, its webhook file and daemon unit the test's.
    let shipped = include_str!("../units/mesh-host-alert@.service")
        .replace("/etc/mesh-host/alert.curl", &webhook)
        .replace(
            "_SYSTEMD_UNIT=mesh-host.service",
            &format!("_SYSTEMD_UNIT={}", d.unit),
        );
    assert!(shipped.contains(&format!("_SYSTEMD_UNIT={} ", d.unit)));
    let dir = format!("/proc/{}/root/run/systemd/system", node.pid());
    std::fs::write(format!("{dir}/{template}"), shipped).expect("template");
    // The forger: a newer entry with the instance's own MESH_ALERT_UNIT,
    // claiming root and the daemon's unit too (journald keeps its own
    // trusted fields), written as a non-root user.
    std::fs::create_dir_all(format!("{dir}/{template}.d")).expect("drop-in dir");
    std::fs::write(
        format!("{dir}/{template}.d/forge.conf"),
        format!(
            "[Service]\nExecStartPre=/bin/sh -c 'id -u >&2; printf \"MESSAGE=forged\\nMESH_ALERT_UNIT=%%s\\nMESH_ALERT_EVENT=forged\\nMESH_STEP=forged\\n_UID=0\\n_SYSTEMD_UNIT={unit}\\n\" \"$$1\" | logger --journald' sh %n\n",
            unit = d.unit
        ),
    )
    .expect("forging drop-in");
    let _template = node.on_drop(format!(
        "systemctl stop '{template_prefix}@*'; rm -rf /run/systemd/system/{template} /run/systemd/system/{template}.d; systemctl daemon-reload"
    ));
    node.sh_ok("systemctl daemon-reload");
    let bad = w.name("bad");
    let img = w.busybox();
    w.write_declaration(json!([declare::step(&bad, &bad, &img, "exit 4", &[], 300)]));
    d.start();

    let out = d.cli_with_state(&["run", &bad]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let instance = page_instance(&d, "step-failed", &bad);
    accepted
        .recv_timeout(Duration::from_secs(60))
        .expect("the webhook is called");
    // curl is connected and waits for its answer: its argument list (and
    // every other process's) holds no URL.
    let curls =
        node.sh_ok("for p in $(pgrep -x curl); do tr '\\0' ' ' </proc/$p/cmdline; echo; done");
    assert!(curls.contains(" -K "), "curl runs with its config: {curls}");
    assert!(
        !curls.contains("hook-secret-token") && !curls.contains(&format!("127.0.0.1:{port}")),
        "the URL is in an argument list: {curls}"
    );
    go.send(()).expect("go");
    let body = received.join().expect("webhook thread");
    let event: Value = serde_json::from_str(&body).expect("the body is the journal entry");
    assert_eq!(field(&event, "MESH_ALERT_EVENT"), "step-failed", "{event}");
    assert_eq!(field(&event, "MESH_ALERT_UNIT"), instance, "{event}");
    assert_eq!(field(&event, "_UID"), "0", "{event}");
    assert_eq!(field(&event, "MESH_STEP"), bad);
    assert_eq!(field(&event, "MESH_EXIT_STATUS"), "4");
    assert_eq!(field(&event, "MESH_MODULE"), "m", "{event}");
    // The forged entry was there, newer, as a non-root user's.
    let forged = entries(&node.journal(&[
        "-b",
        "-o",
        "json",
        &format!("MESH_ALERT_UNIT={instance}"),
        "MESH_ALERT_EVENT=forged",
    ]));
    let forged = forged.first().expect("the forged entry was written");
    assert_ne!(field(forged, "_UID"), "0", "{forged}");
    assert_ne!(field(forged, "_UID"), "", "{forged}");
}

/// The ```yaml block of a markdown text.
fn yaml_block(markdown: &str) -> String {
    let start = markdown.find("```yaml\n").expect("a yaml block") + "```yaml\n".len();
    let len = markdown[start..].find("```").expect("its end");
    markdown[start..start + len].to_string()
}

/// Needs no node, only `promtool` (tests/node/prereqs.sh installs it).
#[test]
fn the_shipped_alert_rules_pass_promtool_and_fire_only_when_they_should() {
    let root = env!("CARGO_MANIFEST_DIR");
    let shipped = format!("{root}/packaging/prometheus/mesh-host-alerts.yml");
    let rules = std::fs::read_to_string(&shipped).expect("the shipped rules");
    assert_eq!(
        yaml_block(include_str!("../docs/metrics.md")),
        rules,
        "docs/metrics.md shows the shipped rules"
    );
    let promtool = |args: &[&str]| {
        std::process::Command::new("promtool")
            .args(args)
            .output()
            .expect("promtool (Debian's prometheus package)")
    };
    let out = promtool(&["check", "rules", &shipped]);
    assert!(
        out.status.success() && stdout(&out).contains("SUCCESS: 9 rules found"),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    // Each alert fires on its series and stays quiet on the others.
    let cases = format!("{root}/tests/prometheus/mesh-host-alerts.test.yml");
    let out = promtool(&["test", "rules", &cases]);
    assert!(
        out.status.success(),
        "promtool test rules:\n{}{}",
        stdout(&out),
        stderr(&out)
    );
    let tested = std::fs::read_to_string(&cases).expect("the cases");
    for alert in rules
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- alert: "))
    {
        assert!(
            tested.contains(&format!("alertname: {alert}")),
            "{alert} has no case in {cases}"
        );
    }
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_held_container_that_will_not_start_again_is_counted_and_paged() {
    let node = Node::from_env();
    let template_prefix = unique_name("wnsa-alert");
    let template = format!("{template_prefix}@.service");
    let mut w = World::new("wnsa");
    let d = DaemonUnit::install_with_args(
        &w,
        "",
        &format!(
            "--metrics-file {} --on-alert {template}",
            w.path("mesh-host.prom")
        ),
    );
    std::fs::write(
        format!("/proc/{}/root/run/systemd/system/{template}", node.pid()),
        "[Service]\nType=oneshot\nExecStart=/bin/echo paged for %I\n",
    )
    .expect("template");
    let _template = node.on_drop(format!(
        "rm -f /run/systemd/system/{template}; systemctl daemon-reload"
    ));
    node.sh_ok("systemctl daemon-reload");
    // A container on a network of its own: removing the network while it
    // is held stopped makes its start fail for real.
    let net = unique_name("wnsa-net");
    node.docker_ok(&["network", "create", &net]);
    let _net = node.on_drop(format!("docker network rm {net}"));
    let svc = w.name("svc");
    let gc = w.name("gc");
    let img = w.busybox();
    let mut held = declare::service("svc", &svc, &img);
    held["network"] = json!(net);
    w.write_declaration(json!([
        held,
        declare::step(&gc, &gc, &img, "sleep 3", &["svc"], 300)
    ]));
    d.start();

    let run = d.cli_spawn(&["run", &gc]);
    wait_for(
        "the held container to stop",
        Duration::from_secs(30),
        || {
            let s = node.docker_ok(&["inspect", "-f", "{{.State.Running}}", &svc]);
            (s.trim() == "false").then_some(())
        },
    );
    node.docker_ok(&["network", "rm", &net]);
    let out = run.wait_with_output().expect("run");
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("WILL NOT START AGAIN"),
        "{}",
        stdout(&out)
    );

    let prom = w.path("mesh-host.prom");
    let text = wait_for("the alert in the metrics", Duration::from_secs(30), || {
        let t = std::fs::read_to_string(&prom).ok()?;
        (sample(&t, "mesh_host_will_not_start_again_total") == Some(1.0)).then_some(t)
    });
    assert_promtool_clean(&text, "the metrics after an alert");
    let instance = page_instance(&d, "will-not-start-again", &gc);
    assert!(
        instance.starts_with(&format!(
            "{template_prefix}@will\\x2dnot\\x2dstart\\x2dagain:{}:",
            gc.replace('-', "\\x2d")
        )),
        "{instance}"
    );
    wait_for("the alert instance", Duration::from_secs(30), || {
        let j = node.journal(&["-b", "-u", &instance, "-o", "cat"]);
        j.contains(&format!("paged for will-not-start-again:{gc}"))
            .then_some(())
    });
    let page = entries(&d.unit_journal(&["-o", "json", &format!("MESH_ALERT_UNIT={instance}")]));
    let page = page.first().expect("the page's entry");
    assert_eq!(field(page, "MESH_CONTAINER"), svc);
    assert_eq!(field(page, "MESH_STEP"), gc);

    // Until the next apply, status needs attention for it (exit 3), through
    // the daemon and from the state directory alike.
    for args in [vec!["status"], vec!["status", "--local"]] {
        let out = d.cli_with_state(&args);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {}", stdout(&out));
        let attention = stdout(&out)
            .lines()
            .find(|l| l.starts_with("ATTENTION: will-not-start-again"))
            .map(str::to_string);
        assert!(
            attention.is_some_and(|l| l.contains(&svc)),
            "{args:?}: {}",
            stdout(&out)
        );
    }
}
