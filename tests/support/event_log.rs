//! Docker's events of a few containers, streamed live from before the
//! action. Docker keeps only its last 256 events: `docker events --since`
//! after a long test on a busy node has lost the early ones (health checks
//! alone fill it in minutes), so a test that counts a container's stops
//! and starts records them as they happen.
//!
//! The stream is known to listen when the creation of a marker container
//! of the test's own has reached it. It is known to have caught up with
//! Docker when the marker, made again with a label of a number used once,
//! has reached it with that number ([`EventLog::caught_up`], which
//! [`EventLog::finish`] calls): Docker streams events in the order it made
//! them, and an earlier marker's event still on its way cannot be taken
//! for it.

use std::fs::File;
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use super::world::World;
use super::{quote, wait_for, Node};

/// Markers made so far in this test binary (a marker is unique to its log).
static MARKERS: AtomicU32 = AtomicU32::new(0);

/// The label that numbers each making of a marker.
const SYNC_LABEL: &str = "mesh-test.sync";

/// The lifecycle actions a log keeps (`rename`: a container of network
/// `none` taking its name once made whole, `declare::is_made`).
const ACTIONS: [&str; 7] = [
    "create", "rename", "start", "stop", "die", "kill", "destroy",
];

/// See the module documentation. The stream ends when the log is finished
/// or dropped (a test that failed early), and after ten minutes at most;
/// the marker is removed then.
pub struct EventLog {
    node: Node,
    child: Child,
    file: PathBuf,
    stop: PathBuf,
    marker: String,
    /// The image the marker is made of.
    img: String,
    /// The marker's makings so far: each is labelled with its number.
    made: AtomicU32,
}

impl EventLog {
    /// Stream the lifecycle events of `names`; returns once the stream
    /// listens.
    pub fn start(w: &World, names: &[&str]) -> EventLog {
        let marker = format!(
            "{}-marker{}",
            w.prefix,
            MARKERS.fetch_add(1, Ordering::Relaxed)
        );
        let file = w.dir.join(format!("{marker}.events"));
        let stop = w.dir.join(format!("{marker}.stop"));
        let mut filters = String::new();
        for n in names.iter().chain([&marker.as_str()]) {
            filters.push_str(&format!(" --filter container={}", quote(n)));
        }
        // Ends itself once told to (the stop file), or after ten minutes.
        let script = format!(
            "docker events --filter type=container{filters} --format '{{{{.Actor.Attributes.name}}}} {{{{.Action}}}} {{{{index .Actor.Attributes \"{SYNC_LABEL}\"}}}}' & p=$!; \
             i=0; while [ ! -e {stop} ] && [ $i -lt 3000 ]; do sleep 0.2; i=$((i+1)); done; kill $p; wait $p",
            stop = quote(&stop.display().to_string())
        );
        let out = File::create(&file).expect("events file");
        let child = w
            .node
            .command("sh", &["-c", &script])
            .stdout(Stdio::from(out))
            .stderr(Stdio::null())
            .spawn()
            .expect("docker events");
        let log = EventLog {
            node: w.node.clone(),
            child,
            file,
            stop,
            marker,
            img: w.busybox(),
            made: AtomicU32::new(0),
        };
        let created = (log.marker.clone(), "create".to_string());
        wait_for(
            "the event stream to listen",
            Duration::from_secs(30),
            || {
                log.make_marker();
                log.raw().contains(&created).then_some(())
            },
        );
        log
    }

    /// Make the marker (again), labelled with a number not used before;
    /// that number.
    fn make_marker(&self) -> u32 {
        let n = self.made.fetch_add(1, Ordering::Relaxed);
        let _ = self.node.docker(&["rm", "-f", &self.marker]);
        self.node.docker_ok(&[
            "create",
            "--name",
            &self.marker,
            "--label",
            &format!("{SYNC_LABEL}={n}"),
            &self.img,
            "true",
        ]);
        n
    }

    /// The lines streamed so far, each split into its fields.
    fn lines(&self) -> Vec<Vec<String>> {
        std::fs::read_to_string(&self.file)
            .unwrap_or_default()
            .lines()
            .map(|l| l.split_whitespace().map(str::to_string).collect())
            .collect()
    }

    /// Every line streamed so far, as `(name, action)`, the marker's too.
    fn raw(&self) -> Vec<(String, String)> {
        self.lines()
            .into_iter()
            .filter_map(|f| Some((f.first()?.clone(), f.get(1)?.clone())))
            .collect()
    }

    /// The lifecycle events of the names streamed so far, in order (some
    /// may still be on their way: [`EventLog::finish`] waits for them).
    pub fn events(&self) -> Vec<(String, String)> {
        self.raw()
            .into_iter()
            .filter(|(n, a)| *n != self.marker && ACTIONS.contains(&a.as_str()))
            .collect()
    }

    /// How many events of the names Docker has made up to now. The
    /// stream can lag behind Docker (a start already seen by `inspect` may
    /// not be in the file yet), so the marker is made again and the
    /// `create` of that making waited for: none made before it is still on
    /// its way.
    pub fn caught_up(&self) -> usize {
        let n = self.make_marker().to_string();
        wait_for("the stream to catch up", Duration::from_secs(30), || {
            self.lines()
                .iter()
                .any(|f| {
                    f.first() == Some(&self.marker)
                        && f.get(1).map(String::as_str) == Some("create")
                        && f.get(2) == Some(&n)
                })
                .then_some(())
        });
        self.events().len()
    }

    /// Every event up to now (once the stream has caught up); the stream
    /// ends.
    pub fn finish(mut self) -> Vec<(String, String)> {
        self.caught_up();
        self.end();
        self.events()
    }

    fn end(&mut self) {
        let _ = std::fs::write(&self.stop, b"");
        let _ = self.child.wait();
        let _ = self.node.docker(&["rm", "-f", &self.marker]);
    }
}

/// A test that failed before [`EventLog::finish`] still ends its stream.
impl Drop for EventLog {
    fn drop(&mut self) {
        self.end();
    }
}
