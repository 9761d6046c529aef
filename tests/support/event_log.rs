//! Docker's events of a few containers, streamed live from the moment the
//! log is made. Docker keeps only its last 256 events: `docker events
//! --since` after a long test on a busy node has lost the early ones
//! (health checks alone fill it in minutes), so a test that counts a
//! container's stops and starts records them as they happen.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::world::{stamp, World};
use super::{quote, Node};

/// See the module documentation. The stream ends when the log is dropped.
pub struct EventLog {
    node: Node,
    child: Child,
    pattern: String,
    lines: Arc<Mutex<Vec<(String, String)>>>,
    reader: Option<JoinHandle<()>>,
}

impl EventLog {
    /// Start recording the lifecycle events (create, start, stop, die,
    /// kill, destroy) of `names`, from now on.
    pub fn start(w: &World, names: &[&str]) -> EventLog {
        // `--since` a moment before the stream is up: an event of the
        // first instants is replayed from Docker's history, not missed.
        let since = stamp();
        let mut args = vec![
            "events".to_string(),
            "--since".to_string(),
            since,
            "--filter".to_string(),
            "type=container".to_string(),
            "--format".to_string(),
            "{{.Actor.Attributes.name}} {{.Action}}".to_string(),
        ];
        for n in names {
            args.push("--filter".into());
            args.push(format!("container={n}"));
        }
        // The docker client runs inside the node, below nsenter: it is
        // found again by its arguments to be stopped.
        let pattern = format!("[d]ocker events --since {}", args[2]);
        let mut child = w
            .node
            .command("docker", &args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("docker events");
        let out = child.stdout.take().expect("piped");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if let Some((n, a)) = line.split_once(' ') {
                    if matches!(a, "create" | "start" | "stop" | "die" | "kill" | "destroy") {
                        sink.lock()
                            .expect("lock")
                            .push((n.to_string(), a.to_string()));
                    }
                }
            }
        });
        EventLog {
            node: w.node.clone(),
            child,
            pattern,
            lines,
            reader: Some(reader),
        }
    }

    /// What was recorded so far: `(name, action)` in order.
    pub fn events(&self) -> Vec<(String, String)> {
        self.lines.lock().expect("lock").clone()
    }

    /// How many times `name` did `action` so far.
    pub fn count(&self, name: &str, action: &str) -> usize {
        self.events()
            .iter()
            .filter(|(n, a)| n == name && a == action)
            .count()
    }
}

impl Drop for EventLog {
    fn drop(&mut self) {
        let _ = self
            .node
            .sh(&format!("pkill -f -- {} || true", quote(&self.pattern)));
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
    }
}
