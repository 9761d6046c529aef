//! `mesh-host daemon` as a real unit of the node, over a [`World`]'s state
//! directory and declaration file: the shipped `units/mesh-host.service`,
//! only its paths changed (and `extra` lines added at the end of
//! `[Service]`, overriding what it sets, and
//! further daemon arguments to its command line).

use std::path::PathBuf;
use std::process::{Child, Output, Stdio};
use std::time::Duration;

use serde_json::Value;

use super::world::World;
use super::{quote, Node};

/// See the module documentation. Stopped and removed when dropped.
pub struct DaemonUnit {
    /// The node.
    pub node: Node,
    /// The unit's name.
    pub unit: String,
    prefix: String,
    bin: String,
    socket: String,
    state: String,
    declaration: String,
    text: String,
}

impl DaemonUnit {
    /// Write the unit for `w`'s state and declaration; nothing is started.
    pub fn install(w: &World, extra: &str) -> DaemonUnit {
        DaemonUnit::install_with_args(w, extra, "")
    }

    /// Write `w`'s declaration of `resources`, install the unit over it
    /// and start it: returns once the daemon is READY (its first apply
    /// done).
    pub fn started(w: &World, resources: Value) -> DaemonUnit {
        w.write_declaration(resources);
        let d = DaemonUnit::install(w, "");
        d.start();
        d
    }

    /// [`DaemonUnit::started`], with `args` (e.g. `--metrics-file=`) added
    /// to the daemon's command line.
    pub fn started_with_args(w: &World, args: &str, resources: Value) -> DaemonUnit {
        w.write_declaration(resources);
        let d = DaemonUnit::install_with_args(w, "", args);
        d.start();
        d
    }

    /// [`DaemonUnit::install`], with `args` (e.g. `--metrics-file=`) added
    /// to the daemon's command line.
    pub fn install_with_args(w: &World, extra: &str, args: &str) -> DaemonUnit {
        let node = w.node.clone();
        let unit = format!("{}-daemon.service", w.prefix);
        let socket = w.path("control.sock");
        let state = w.path("state");
        let declaration = w.path("declaration.json");
        let mut exec = format!(
            "ExecStart={} daemon --state-dir {state} --declaration {declaration} --control-socket {socket} --unit-dir /run/systemd/system",
            w.bin,
        );
        if let Some(host) = node.docker_host() {
            exec.push_str(&format!(" --docker-host {host}"));
        }
        if !args.is_empty() {
            exec.push(' ');
            exec.push_str(args);
        }
        // The default metrics file is the machine's one path, which the
        // package test's daemon writes and reads: a test's daemon writes
        // its own unless the test names one (or none).
        if !args.contains("--metrics-file") {
            exec.push_str(&format!(" --metrics-file {}", w.path("metrics.prom")));
        }
        let shipped = include_str!("../../units/mesh-host.service");
        let text: Vec<String> = shipped
            .lines()
            // Its socket and state live in the test's directory:
            // /run/mesh-host and /var/lib/mesh-host belong to a packaged
            // daemon (systemd would make the latter at each start, under
            // the package test's purge running beside it).
            .filter(|l| !l.starts_with("RuntimeDirectory") && !l.starts_with("StateDirectory"))
            .map(|l| {
                if l.starts_with("ExecStart=") {
                    exec.clone()
                } else if l.starts_with("ExecReload=+/usr/bin/mesh-host") {
                    format!("ExecReload=+{} reload --control-socket {socket}", w.bin)
                } else if l == "[Install]" && !extra.is_empty() {
                    // At the end of [Service]: a setting the shipped unit
                    // has too (`WatchdogSec=`) is overridden, the last one
                    // read winning.
                    format!("{extra}\n\n[Install]")
                } else {
                    l.to_string()
                }
            })
            .collect();
        let d = DaemonUnit {
            node,
            unit,
            prefix: w.prefix.clone(),
            bin: w.bin.clone(),
            socket,
            state,
            declaration,
            text: text.join("\n") + "\n",
        };
        d.write_unit();
        d
    }

    /// The unit file in the node's /run, and systemd told.
    fn write_unit(&self) {
        let path = PathBuf::from(format!(
            "/proc/{}/root/run/systemd/system/{}",
            self.node.pid(),
            self.unit
        ));
        std::fs::write(&path, &self.text).expect("write unit");
        self.node.sh_ok("systemctl daemon-reload");
    }

    /// After [`Node::power_cut`]: the unit written again (its file lived in
    /// the old boot's /run) and started, as a unit enabled at boot is;
    /// returns once the daemon is READY (its first apply done).
    pub fn start_after_boot(&self) {
        self.write_unit();
        self.start();
    }

    /// `systemctl start`: returns once READY=1 was sent (Type=notify).
    pub fn start(&self) {
        self.node
            .sh_ok(&format!("systemctl start {}", quote(&self.unit)));
    }

    /// `systemctl reload` the daemon: it returns once the reload's apply
    /// has ended (the unit's ExecReload= waits for it). The unit is then
    /// active again.
    pub fn reload_and_wait(&self) {
        let reload = self
            .node
            .sh(&format!("systemctl reload {}", quote(&self.unit)));
        if !reload.status.success() {
            let unit = quote(&self.unit);
            let status = self.node.sh(&format!(
                "systemctl status --no-pager -l {unit}; journalctl --no-pager -n 40 -u {unit}"
            ));
            panic!(
                "systemctl reload {} failed ({}): {}\n{}",
                self.unit,
                reload.status,
                String::from_utf8_lossy(&reload.stderr),
                String::from_utf8_lossy(&status.stdout)
            );
        }
        assert_eq!(
            self.prop("ActiveState"),
            "active",
            "systemctl reload returned before the reload ended"
        );
    }

    /// Wait up to `timeout` for the unit's ActiveState to be `state`; on a
    /// timeout, the panic carries the unit's status and its journal.
    pub fn wait_active_state(&self, state: &str, timeout: Duration) {
        let start = std::time::Instant::now();
        loop {
            let now = self.prop("ActiveState");
            if now == state {
                return;
            }
            if start.elapsed() >= timeout {
                let unit = quote(&self.unit);
                let status = self.node.sh(&format!(
                    "systemctl status --no-pager -l {unit}; journalctl --no-pager -n 60 -u {unit}"
                ));
                panic!(
                    "{} still {now} after {timeout:?}, waiting for {state}:\n{}",
                    self.unit,
                    String::from_utf8_lossy(&status.stdout)
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// `systemctl restart`: returns once the new daemon is READY.
    pub fn restart(&self) {
        self.node
            .sh_ok(&format!("systemctl restart {}", quote(&self.unit)));
    }

    /// One property of the unit.
    pub fn prop(&self, property: &str) -> String {
        self.node.unit_property(&self.unit, property)
    }

    /// The daemon's pid, when it runs (else "0").
    pub fn main_pid(&self) -> String {
        self.prop("MainPID")
    }

    /// Whether it runs and told systemd it is ready.
    pub fn active(&self) -> bool {
        self.prop("ActiveState") == "active" && self.main_pid() != "0"
    }

    fn args(&self, args: &[&str]) -> Vec<String> {
        let mut all: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        all.push("--control-socket".into());
        all.push(self.socket.clone());
        all
    }

    /// A command through the daemon's control socket, waited for; its
    /// output is logged.
    pub fn cli(&self, args: &[&str]) -> Output {
        let out = self
            .node
            .command(&self.bin, &self.args(args))
            .output()
            .expect("mesh-host");
        log(args, &out);
        out
    }

    /// A command through the daemon's control socket that is also given
    /// the daemon's state directory and declaration file (so that its
    /// `--local` form reads the same), waited for; its output is logged.
    pub fn cli_with_state(&self, args: &[&str]) -> Output {
        let mut all = self.args(args);
        all.extend([
            "--state-dir".to_string(),
            self.state.clone(),
            "--declaration".to_string(),
            self.declaration.clone(),
        ]);
        let out = self
            .node
            .command(&self.bin, &all)
            .output()
            .expect("mesh-host");
        log(args, &out);
        out
    }

    /// A command through the daemon's control socket, not waited for.
    pub fn cli_spawn(&self, args: &[&str]) -> Child {
        self.node
            .command(&self.bin, &self.args(args))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("mesh-host")
    }

    /// A command through the daemon's control socket on a terminal: run
    /// under `script` (util-linux) on a pseudo-terminal with `TERM=xterm`
    /// and `env` (`VAR=value` words), its stdin piped to the terminal
    /// (`\x03` is a Ctrl-C) and what the terminal shows on stdout (its
    /// stdout and stderr alike). Not waited for.
    pub fn cli_pty_spawn(&self, args: &[&str], env: &[&str]) -> Child {
        let words: Vec<String> = std::iter::once(self.bin.clone())
            .chain(self.args(args))
            .map(|a| quote(&a))
            .collect();
        let cmd = format!("TERM=xterm {} exec {}", env.join(" "), words.join(" "));
        self.node
            .command("script", &["-qefc", &cmd, "/dev/null"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("script")
    }

    /// [`DaemonUnit::cli_pty_spawn`], waited for; its output is logged.
    pub fn cli_pty(&self, args: &[&str], env: &[&str]) -> Output {
        let out = self
            .cli_pty_spawn(args, env)
            .wait_with_output()
            .expect("script");
        log(args, &out);
        out
    }

    /// `journalctl -u UNIT -t mesh-host ARGS -o cat` since `since` (a
    /// `journalctl --since` value).
    pub fn journal(&self, since: &str, args: &[&str]) -> String {
        let mut all = vec![
            "-u",
            self.unit.as_str(),
            "-t",
            "mesh-host",
            "--since",
            since,
            "-o",
            "cat",
        ];
        all.extend_from_slice(args);
        self.node.journal(&all)
    }

    /// `journalctl -b -u UNIT ARGS`: everything of the unit this boot,
    /// whatever its identifier, in the format `args` ask for.
    pub fn unit_journal(&self, args: &[&str]) -> String {
        let mut all = vec!["-b", "-u", self.unit.as_str()];
        all.extend_from_slice(args);
        self.node.journal(&all)
    }
}

/// A command's exit status and output, on the test's stderr.
fn log(args: &[&str], out: &Output) {
    eprintln!(
        "mesh-host {args:?} -> {:?}\n{}{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Drop for DaemonUnit {
    /// Stops the unit and removes every unit file named after the test
    /// (units a test declared too).
    fn drop(&mut self) {
        let _ = self.node.sh(&format!(
            "systemctl stop {u}; systemctl reset-failed {u}; rm -f /run/systemd/system/{p}*; systemctl daemon-reload",
            u = quote(&self.unit),
            p = self.prefix
        ));
    }
}
