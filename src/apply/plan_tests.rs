//! The plan is what the apply does: over every resource kind, `diff`
//! lists exactly the steps the apply then takes, action for action, each
//! step of the apply's report done; and the scripted runtime, unit
//! manager and account tools see exactly those changes — none for the
//! diff. The same on a real node: tests/diff_node.rs.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::*;
use crate::accounts::FakeAccounts;
use crate::apply::PreviewText;

/// A rig with a unit manager and account tools of its own.
struct Kinds {
    r: Rig,
    units: Arc<FakeUnits>,
    accounts: Arc<FakeAccounts>,
}

impl Kinds {
    fn new() -> Kinds {
        let r = Rig::new();
        for n in 1..=3 {
            r.fake.add_image(&img(n));
        }
        Kinds {
            r,
            units: Arc::new(FakeUnits::default()),
            accounts: Arc::new(FakeAccounts::default()),
        }
    }

    fn applier(&self) -> Applier {
        self.r
            .applier()
            .with_units(self.units.clone())
            .with_accounts(self.accounts.clone())
    }
}

/// Each line's id, action and steps (what is done to what).
fn plan_of(report: &ApplyReport) -> Vec<(String, String, Vec<String>)> {
    report
        .lines
        .iter()
        .map(|l| {
            let steps = l
                .steps
                .iter()
                .map(|s| format!("{} {}", s.act, s.on))
                .collect();
            (l.id.clone(), l.action.to_string(), steps)
        })
        .collect()
}

/// What the runtime calls since `from` changed: containers, networks,
/// volumes and images, by name (a container set aside is its own).
fn touched(calls: &[Call]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let base = |n: &str| {
        crate::runtime::replaced_base(n)
            .unwrap_or(n)
            .trim_end_matches(".making")
            .to_string()
    };
    for c in calls {
        match c {
            Call::Create(n)
            | Call::Start(n)
            | Call::Stop(n)
            | Call::Kill(n)
            | Call::Remove(n)
            | Call::RemoveStopped(n) => {
                out.insert(format!("container {}", base(n)));
            }
            Call::Rename(a, b) => {
                out.insert(format!("container {}", base(a)));
                out.insert(format!("container {}", base(b)));
            }
            Call::Connect(c, n) | Call::Disconnect(c, n) => {
                out.insert(format!("container {c}"));
                out.insert(format!("network {n}"));
            }
            Call::CreateNetwork(n) | Call::RemoveNetwork(n) => {
                out.insert(format!("network {n}"));
            }
            Call::CreateVolume(n) => {
                out.insert(format!("volume {n}"));
            }
            Call::Pull(i) => {
                out.insert(format!("image {i}"));
            }
            _ => {}
        }
    }
    out
}

/// What the steps of a report say they change in the runtime, named as
/// [`touched`] names them.
fn stepped(report: &ApplyReport) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for step in report
        .lines
        .iter()
        .flat_map(|l| &l.steps)
        .chain(&report.tidy)
    {
        let on = step.on.as_str();
        if let Some(rest) = on.strip_prefix("container ") {
            match rest.split_once(" to network ") {
                Some((c, n)) => {
                    out.insert(format!("container {c}"));
                    out.insert(format!("network {n}"));
                }
                None => {
                    out.insert(format!("container {rest}"));
                }
            }
        } else if ["network ", "volume ", "image "]
            .iter()
            .any(|p| on.starts_with(p))
        {
            out.insert(on.to_string());
        }
        // A replace by another name makes the new one too.
        if let Some(made) = step
            .reason
            .as_deref()
            .and_then(|r| r.strip_prefix("made anew as "))
        {
            out.insert(format!("container {made}"));
        }
        // A network's remake detaches what it attaches again; a run
        // replaces the last run's container.
    }
    out
}

/// `diff`, then `apply` of `decl`: the diff changes nothing; the apply
/// takes the diff's plan step by step, each step done, and changes in the
/// runtime exactly what the steps name. Both reports.
async fn diff_then_apply(k: &Kinds, decl: &Declaration) -> (ApplyReport, ApplyReport) {
    let runtime_before = k.r.fake.calls().len();
    let units_before = k.units.calls().len();
    let accounts_before = k.accounts.calls().len();
    let diff = k.applier().preview(decl).await;
    let reads_only: Vec<Call> = k.r.fake.calls()[runtime_before..].to_vec();
    assert!(
        touched(&reads_only).is_empty(),
        "diff changed the runtime: {reads_only:?}"
    );
    assert_eq!(k.units.calls().len(), units_before, "diff changed a unit");
    assert_eq!(
        k.accounts.calls().len(),
        accounts_before,
        "diff changed an account"
    );
    assert!(
        diff.lines
            .iter()
            .flat_map(|l| &l.steps)
            .all(|s| s.outcome.is_none()),
        "a plan has no outcomes"
    );

    let runtime_before = k.r.fake.calls().len();
    let applied = k.applier().apply(decl).await;
    assert_eq!(
        plan_of(&diff),
        plan_of(&applied),
        "the apply took another plan than diff showed\ndiff:\n{}\napply:\n{applied}",
        PreviewText(&diff)
    );
    for line in &applied.lines {
        for step in &line.steps {
            assert_eq!(step.outcome.as_deref(), Some("done"), "{line}: {step}");
        }
    }
    assert_eq!(diff.changed, applied.changed);
    let calls = k.r.fake.calls()[runtime_before..].to_vec();
    assert_eq!(
        touched(&calls),
        stepped(&applied),
        "the runtime saw other changes than the steps say: {calls:?}"
    );
    (diff, applied)
}

/// The unit manager's calls since `from`, each named by the step it is.
fn unit_calls(k: &Kinds, from: usize) -> Vec<String> {
    k.units.calls()[from..].to_vec()
}

fn unit(id: &str, name: &str, content: &str, enabled: bool) -> Value {
    json!({"id": id, "type": "unit", "name": name, "content": content, "enabled": enabled})
}

fn svc_on(id: &str, image: &str, network: &str) -> Value {
    json!({"id": id, "type": "container", "name": id, "image": image,
           "networks": [{"name": network}]})
}

#[tokio::test]
async fn diff_lists_exactly_what_the_apply_does_over_every_kind() {
    let k = Kinds::new();
    let r = &k.r;
    let env = r.path("etc/app/env");
    let conf = r.path("etc/app/app.conf");
    let share = r.path("srv/share");
    let old_share = r.path("srv/old-share");
    let unit_a = "[Service]\nExecStart=/bin/true\n";
    let mut web = with_env_file(svc_on("web", &img(1), "px_back"), &env);
    web["mounts"] = json!([{"source": "px_data", "target": "/data"}]);
    let mut cache = service("cache", &img(1));
    cache["restart-on"] = json!(["conf"]);
    r.fake.exit_with("migrate", 0, Duration::from_millis(5));
    let identity = |id: &str, uid: u32| json!({"id": id, "type": "identity", "name": id, "uid": uid, "gid": uid});
    let folder = |id: &str, path: &str, access: Value| json!({"id": id, "type": "shared-folder", "path": path, "access": access});
    let first = decl(json!([
        {"id": "data", "type": "volume", "name": "px_data"},
        {"id": "back", "type": "network", "name": "px_back", "subnet": "10.61.0.0/24"},
        file("env", &env, "A=1\n"),
        {"id": "dir", "type": "directory", "path": r.path("srv/dir"), "mode": "0750"},
        file("conf", &conf, "a\n"),
        web.clone(),
        cache.clone(),
        service("api", &img(1)),
        service("old", &img(1)),
        service("held", &img(1)),
        run_once("migrate", &img(1), Some(60)),
        step("gc", &img(2), &[]),
        unit("a", "a.service", unit_a, true),
        unit("gone", "gone.service", unit_a, false),
        identity("appuser", 2601),
        identity("olduser", 2602),
        folder("share", &share, json!([{"identity": "appuser", "write": true}, {"identity": "olduser"}])),
        folder("oldshare", &old_share, json!([{"identity": "olduser"}])),
    ]));
    let units_from = k.units.calls().len();
    let (diff, applied) = diff_then_apply(&k, &first).await;
    assert!(applied.ok, "{applied}");
    assert_eq!(
        diff.line("web").map(|l| l.action.to_string()).as_deref(),
        Some("created")
    );
    assert!(r.fake.is_running("web") && r.fake.is_running("held"));
    assert_eq!(
        unit_calls(&k, units_from),
        [
            "prepare a,gone",
            "enable a.service",
            "start a.service",
            "start gone.service"
        ],
        "the unit steps, in order: {applied}"
    );
    assert_eq!(k.accounts.calls(), ["make appuser", "make olduser"]);

    // Behind the host's back: a service and a unit stopped, the unit
    // disabled; a window opens holding `held`.
    r.fake.stop("api").await.unwrap();
    k.units.stop_by_hand("a.service");
    k.units.disable_by_hand("a.service");
    r.open_window("nightly", &["held"]);

    let mut fresh_web = with_env_file(svc_on("web", &img(1), "px_back"), &env);
    fresh_web["mounts"] = json!([{"source": "px_data", "target": "/data"}]);
    let mut gc = step("gc", &img(2), &[]);
    gc["schedule"] = json!("5 4 * * *");
    let second = decl(json!([
        {"id": "data", "type": "volume", "name": "px_data"},
        {"id": "more", "type": "volume", "name": "px_more"},
        {"id": "back", "type": "network", "name": "px_back", "subnet": "10.62.0.0/24"},
        file("env", &env, "A=2\n"),
        {"id": "dir", "type": "directory", "path": r.path("srv/dir"), "mode": "0700"},
        file("conf", &conf, "b\n"),
        fresh_web,
        cache,
        service("api", &img(1)),
        service("held", &img(3)),
        service("fresh", &img(1)),
        run_once("migrate", &img(1), Some(60)),
        gc,
        unit("a", "a.service", unit_a, true),
        unit("b", "b.service", unit_a, false),
        identity("appuser", 2601),
        identity("newuser", 2603),
        folder("share", &share, json!([{"identity": "appuser", "write": true}, {"identity": "newuser"}])),
    ]));
    let units_from = k.units.calls().len();
    let accounts_from = k.accounts.calls().len();
    let (diff, applied) = diff_then_apply(&k, &second).await;
    assert!(applied.ok, "{applied}");
    let said = |id: &str| {
        let l = diff
            .line(id)
            .unwrap_or_else(|| panic!("no line {id}: {diff:?}"));
        format!("{} {}", l.action, l.reason.as_deref().unwrap_or(""))
    };
    // The recreate a file written earlier in the plan causes, judged
    // against the content the plan writes.
    assert_eq!(said("web"), format!("recreated {env} changed"));
    assert_eq!(said("cache"), format!("started restart-on: {conf} changed"));
    assert_eq!(said("api"), "started was not running");
    assert!(said("held").starts_with("held-still held by the window of nightly"));
    assert_eq!(said("fresh"), "created ");
    assert_eq!(said("gc"), "installed ");
    assert!(said("back").starts_with("recreated subnet changed; attached again: web"));
    assert_eq!(said("more"), "created volume px_more");
    assert_eq!(said("dir"), "updated mode 0750 -> 0700");
    // The unit stopped and disabled by hand: started and enabled again.
    assert_eq!(said("a"), "started started; enabled");
    assert_eq!(said("b"), "started file created; started");
    assert!(
        said("share").contains("grant set: uid 2603 read"),
        "{}",
        said("share")
    );
    assert!(
        said("share").contains("grant taken away: uid 2602"),
        "{}",
        said("share")
    );
    for (id, action) in [
        ("old", "removed"),
        ("gone.service", "removed"),
        ("oldshare", "removed"),
        ("olduser", "removed"),
    ] {
        assert!(
            diff.lines
                .iter()
                .any(|l| l.id == id && l.action.to_string() == action),
            "{id} {action}: {diff:?}"
        );
    }
    // A line that takes no step changes nothing, and the other way round.
    for line in &applied.lines {
        assert_eq!(
            line.steps.is_empty(),
            !line.changes_something(),
            "{line}: {:?}",
            line.steps
        );
    }
    assert_eq!(
        unit_calls(&k, units_from),
        [
            "prepare b",
            "enable a.service",
            "start a.service",
            "start b.service",
            "remove gone.service"
        ]
    );
    assert_eq!(
        k.accounts.calls()[accounts_from..],
        ["make newuser", "remove olduser"]
    );
    assert!(k.units.is_active("a.service"));
    assert!(r.fake.is_running("api") && r.fake.is_running("cache"));
    assert_eq!(r.fake.spec_of("web").unwrap().env[0].1, "2");
    assert_eq!(r.fake.spec_of("held").unwrap().image, img(1), "held still");
    // The network was made again and web is on it.
    assert_eq!(
        r.fake.networks()["px_back"].subnet.as_deref(),
        Some("10.62.0.0/24")
    );
    assert!(r
        .fake
        .attachments_of("web")
        .iter()
        .any(|a| a.network == "px_back"));
}

#[tokio::test]
async fn a_unit_stopped_or_disabled_by_hand_is_in_the_plan() {
    let k = Kinds::new();
    let declared = decl(json!([unit(
        "a",
        "a.service",
        "[Service]\nExecStart=/bin/true\n",
        true
    )]));
    let (_, first) = diff_then_apply(&k, &declared).await;
    assert_eq!(
        first.lines[0].to_string(),
        "a started: file created; started; enabled"
    );
    // Nothing to do: nothing planned, nothing done.
    let (diff, _) = diff_then_apply(&k, &declared).await;
    assert!(!diff.changed, "{}", PreviewText(&diff));
    assert_eq!(diff.diff_exit().code(), 0);

    k.units.stop_by_hand("a.service");
    let (diff, applied) = diff_then_apply(&k, &declared).await;
    assert_eq!(diff.lines[0].to_string(), "a started: started");
    assert_eq!(diff.diff_exit().code(), 1);
    assert!(PreviewText(&diff)
        .to_string()
        .contains("a started: started"));
    assert!(applied.changed && k.units.is_active("a.service"));

    // Enablement alone is a step too, though the word stays the file's.
    k.units.disable_by_hand("a.service");
    let (diff, applied) = diff_then_apply(&k, &declared).await;
    assert_eq!(diff.lines[0].to_string(), "a unchanged: enabled");
    assert_eq!(diff.lines[0].steps[0].act, "enable");
    assert!(diff.changed && applied.changed);
    assert_eq!(diff.diff_exit().code(), 1);
    assert!(
        PreviewText(&diff)
            .to_string()
            .contains("apply would change 1 resource(s): 1 unchanged (enable)"),
        "{}",
        PreviewText(&diff)
    );
}

#[tokio::test]
async fn what_a_run_once_step_changes_is_decided_again_and_said() {
    let k = Kinds::new();
    let r = &k.r;
    let env = r.path("etc/app/env");
    let resources = |migrate: Value| {
        decl(json!([
            file("env", &env, "A=1\n"),
            migrate,
            with_env_file(service("web", &img(1)), &env),
            service("later", &img(1)),
        ]))
    };
    r.fake.exit_with("migrate", 0, Duration::from_millis(5));
    let declared = resources(run_once("migrate", &img(1), Some(60)));
    let (_, first) = diff_then_apply(&k, &declared).await;
    assert!(first.ok, "{first}");

    // A run-once step that changes nothing: the apply is its plan.
    let (diff, applied) = diff_then_apply(&k, &declared).await;
    assert_eq!(said_web(&diff), "web unchanged");
    assert_eq!(said_web(&applied), "web unchanged");

    // One that writes the env-file web reads: web's decision is taken
    // again after it, and its line says why.
    let written = env.clone();
    r.fake.on_start("migrate", move || {
        std::fs::write(&written, "A=9\n").unwrap();
    });
    let diff = k.applier().preview(&declared).await;
    assert_eq!(said_web(&diff), "web unchanged");
    let applied = k.applier().apply(&declared).await;
    assert!(applied.ok, "{applied}");
    assert_eq!(
        said_web(&applied),
        format!("web recreated: {env} changed (after run-once step migrate)")
    );
    assert_eq!(r.fake.spec_of("web").unwrap().env[0].1, "9");
    // What it did not change is carried out as planned.
    assert_eq!(
        applied.line("later").map(ToString::to_string).as_deref(),
        Some("later unchanged")
    );
}

fn said_web(report: &ApplyReport) -> String {
    report
        .line("web")
        .map(ToString::to_string)
        .unwrap_or_default()
}

#[tokio::test]
async fn a_file_written_under_a_mounted_directory_the_plan_makes_is_read_as_written() {
    let k = Kinds::new();
    let r = &k.r;
    let dir = r.path("srv/conf");
    let mut web = service("web", &img(1));
    web["mounts"] = json!([{"source": dir, "target": "/conf", "read-only": true}]);
    let with = |content: &str| {
        decl(json!([
            file("conf", &format!("{dir}/app.conf"), content),
            web.clone()
        ]))
    };
    // The directory does not exist yet: the plan makes it (a parent of
    // the file it writes), and web is judged reading that file.
    let (_, first) = diff_then_apply(&k, &with("a=1\n")).await;
    assert!(first.ok, "{first}");
    let (diff, _) = diff_then_apply(&k, &with("a=1\n")).await;
    assert!(!diff.changed, "{}", PreviewText(&diff));
    let (diff, _) = diff_then_apply(&k, &with("a=2\n")).await;
    assert_eq!(
        diff.line("web").map(ToString::to_string),
        Some(format!("web recreated: {dir}/app.conf changed"))
    );
}

#[tokio::test]
async fn a_network_whose_containers_the_plan_removes_is_removed_with_them() {
    let k = Kinds::new();
    let declared = decl(json!([
        {"id": "back", "type": "network", "name": "px_back"},
        svc_on("web", &img(1), "px_back"),
    ]));
    let (_, first) = diff_then_apply(&k, &declared).await;
    assert!(first.ok, "{first}");
    // Nothing declared: the container goes, and then nothing uses the
    // network: the plan says so before either is removed.
    let (diff, applied) = diff_then_apply(&k, &decl(json!([]))).await;
    assert_eq!(
        plan_of(&diff),
        vec![
            (
                "web".to_string(),
                "removed".to_string(),
                vec!["remove container web".to_string()]
            ),
            (
                "back".to_string(),
                "removed".to_string(),
                vec!["remove network px_back".to_string()]
            ),
        ]
    );
    assert!(applied.ok, "{applied}");
    assert!(!k.r.fake.networks().contains_key("px_back"));
}

#[tokio::test]
async fn a_refusal_is_planned_and_the_apply_refuses_the_same_doing_the_rest() {
    let k = Kinds::new();
    let r = &k.r;
    // A folder holding data the host never took: refused, by the plan and
    // then by the apply, touching nothing in it.
    let full = r.path("srv/full");
    std::fs::create_dir_all(&full).unwrap();
    std::fs::write(format!("{full}/data"), "kept\n").unwrap();
    let declared = decl(json!([
        {"id": "appuser", "type": "identity", "name": "appuser", "uid": 2611, "gid": 2611},
        {"id": "full", "type": "shared-folder", "path": full, "access": [{"identity": "appuser"}]},
        service("web", &img(1)),
    ]));
    let (diff, applied) = diff_then_apply(&k, &declared).await;
    let line = diff.line("full").expect("full");
    assert_eq!(line.action.to_string(), "refused", "{}", PreviewText(&diff));
    assert!(line.steps.is_empty(), "a refusal takes no step: {line}");
    assert!(!diff.ok && !applied.ok, "{applied}");
    assert_eq!(
        applied.line("full").map(ToString::to_string),
        Some(line.to_string())
    );
    // The rest of the plan is carried out.
    assert!(r.fake.is_running("web"));
    assert_eq!(k.accounts.calls(), ["make appuser"]);
    assert_eq!(
        std::fs::read_to_string(format!("{full}/data")).unwrap(),
        "kept\n"
    );
}
