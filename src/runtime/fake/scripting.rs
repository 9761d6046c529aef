//! The fake's scripting: failures, delays and exits a test arms before
//! it acts.

use std::time::Duration;

use super::state::PullFailure;
use super::*;

impl FakeRuntime {
    // ---- seeding ----

    /// Makes an image present.
    pub fn add_image(&self, image: &str) {
        self.state().images.insert(image.to_owned());
    }

    /// `image` declares `VOLUME` at each of `targets`.
    pub fn set_image_volumes(&self, image: &str, targets: &[&str]) {
        self.state().volumes.image_volumes.insert(
            image.to_owned(),
            targets.iter().map(|t| t.to_string()).collect(),
        );
    }

    /// A network made outside mesh-host (no managed label).
    pub fn add_network(&self, info: NetworkInfo) {
        self.state().networks.add(info);
    }

    /// A volume made outside mesh-host.
    pub fn add_volume(&self, info: VolumeInfo) {
        self.state().volumes.add(info);
    }

    /// The local image `tag` has these repository digests.
    pub fn set_repo_digests(&self, tag: &str, digests: &[&str]) {
        let mut state = self.state();
        state.images.insert(tag.to_owned());
        state.repo_digests.insert(
            tag.to_owned(),
            digests.iter().map(|d| d.to_string()).collect(),
        );
    }

    /// Puts a container in place without recording a call and without adding
    /// [`LABEL_MANAGED`] (so unmanaged containers can be seeded too).
    pub fn add_container(&self, spec: ContainerSpec, running: bool) {
        let mut state = self.state();
        let name = spec.name.clone();
        state.insert(spec);
        if running {
            state.begin_run(&name);
        }
    }

    /// Dates the creation of `name` back by `secs` seconds.
    pub fn age(&self, name: &str, secs: i64) {
        if let Some(c) = self.state().containers.get_mut(name) {
            c.created -= secs;
        }
    }

    /// Dates the last start of running `name` back by `secs` seconds (as
    /// its runtime reports it: a run that began before the test).
    pub fn date_start(&self, name: &str, secs: i64) {
        if let Some(c) = self.state().containers.get_mut(name) {
            let dated = c
                .started_at
                .as_deref()
                .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
                .map(|t| t - chrono::Duration::seconds(secs));
            if let Some(t) = dated {
                c.started_at = Some(t.to_rfc3339_opts(chrono::SecondsFormat::Nanos, true));
            }
        }
    }

    /// Every start of `name` fails (with [`RuntimeError::Api`]) until
    /// [`heal_start`](Self::heal_start).
    pub fn fail_start(&self, name: &str) {
        self.state().fail_start.insert(name.to_owned());
    }

    /// Undoes [`fail_start`](Self::fail_start).
    pub fn heal_start(&self, name: &str) {
        self.state().fail_start.remove(name);
    }

    /// Every stop of `name` fails (with [`RuntimeError::Api`]) and leaves it
    /// running.
    pub fn fail_stop(&self, name: &str) {
        self.state().fail_stop.insert(name.to_owned());
    }

    /// The next create of `name` fails with `error`.
    pub fn fail_create(&self, name: &str, error: RuntimeError) {
        self.state().fail_create.insert(name.to_owned(), error);
    }

    /// Every pull of `image` fails with `error`.
    pub fn fail_pull(&self, image: &str, error: RuntimeError) {
        self.state().fail_pull.insert(
            image.to_owned(),
            PullFailure {
                error,
                remaining: None,
            },
        );
    }

    /// The next `times` pulls of `image` fail with `error`; later ones work.
    pub fn fail_pull_times(&self, image: &str, error: RuntimeError, times: usize) {
        if times == 0 {
            self.state().fail_pull.remove(image);
            return;
        }
        self.state().fail_pull.insert(
            image.to_owned(),
            PullFailure {
                error,
                remaining: Some(times),
            },
        );
    }

    /// Containers' output goes to the runtime's own logs
    /// ([`RuntimeView::journals_output`] false, as on Podman): mesh-host
    /// forwards it to the journal.
    pub fn forwarding_output(&self) {
        self.state().forwarded_output = true;
    }

    /// Container `name` writes `text` (a line or more, or part of one) on
    /// `stream`.
    pub fn write_output(&self, name: &str, stream: crate::runtime::OutputStream, text: &str) {
        self.shared.outputs.write(name, stream, text);
    }

    /// Every call fails with [`RuntimeError::Unreachable`] while set.
    pub fn set_unreachable(&self, unreachable: bool) {
        self.state().unreachable = unreachable;
    }

    /// Waits on `name`, the one in progress included, fail while the
    /// container keeps running: the runtime lost track of the run.
    pub fn lose_track(&self, name: &str) {
        self.state().lost_track.insert(name.to_owned());
        self.shared.changed.notify_waiters();
    }

    /// `name` has a health check: `starting` for `after` once started, then
    /// `status` (`healthy` or `unhealthy`) with `output`.
    pub fn set_health(&self, name: &str, status: &str, output: &str, after: Duration) {
        self.state()
            .health
            .insert(name.to_owned(), (status.into(), output.into(), after));
    }

    /// Each run of `name` does `act` when it starts (a run-once step that
    /// writes a file the host reads after it).
    pub fn on_start(&self, name: &str, act: impl Fn() + Send + Sync + 'static) {
        self.state()
            .on_start
            .insert(name.to_owned(), super::OnStart(std::sync::Arc::new(act)));
    }

    /// Every inspect of `name` panics (a bug in the host's code path).
    pub fn panic_on_inspect(&self, name: &str) {
        self.state().panic_on_inspect.insert(name.to_owned());
    }

    /// The driver [`ContainerRuntime::cgroup_driver`] reports.
    pub fn set_cgroup_driver(&self, driver: CgroupDriver) {
        self.state().driver = Some(driver);
    }

    /// Each run of `name` (a step run to completion) exits with `code`
    /// `after` it starts; a run already going ends `after` from now. Without
    /// this a container runs until stopped or killed.
    pub fn exit_with(&self, name: &str, code: i64, after: Duration) {
        let run = {
            let mut state = self.state();
            state.exit_scripts.insert(name.to_owned(), (code, after));
            state
                .containers
                .get(name)
                .filter(|c| c.status == Status::Running)
                .map(|c| c.run)
        };
        if let Some(run) = run {
            self.arm_exit(name, run, code, after);
        }
    }

    /// The runs of `name` that end from now on are ended by the kernel's
    /// OOM killer: its inspection says `oom_killed`.
    pub fn oom_kill_runs(&self, name: &str) {
        self.state().oom_kills.insert(name.to_owned());
    }

    /// Stops of `name` take `delay` (tokio time) before the container
    /// exits, like a service with a slow shutdown.
    pub fn stop_delay(&self, name: &str, delay: Duration) {
        self.state().stop_delays.insert(name.to_owned(), delay);
    }

    /// Stops of `name` return `delay` (tokio time) after the container
    /// died, like Docker's, which cleans the container up (its mounts, its
    /// network) between its `die` and its stop's answer.
    pub fn stop_cleanup(&self, name: &str, delay: Duration) {
        self.state().stop_cleanups.insert(name.to_owned(), delay);
    }

    /// Starts of `name` take `delay` before the container runs (an image
    /// slow to come up): the start is recorded when asked for.
    pub fn start_delay(&self, name: &str, delay: Duration) {
        self.state().start_delays.insert(name.to_owned(), delay);
    }

    /// Answers of inspects of `name` arrive `delay` after they were read:
    /// what changes meanwhile is not in them.
    pub fn inspect_delay(&self, name: &str, delay: Duration) {
        self.state().inspect_delays.insert(name.to_owned(), delay);
    }

    /// The exit code a stop of `name` produces (default 0: a process that
    /// handles SIGTERM).
    pub fn stop_exit_code(&self, name: &str, code: i64) {
        self.state().stop_exit_codes.insert(name.to_owned(), code);
    }

    /// Starts `name` behind the host's back (an operator, a restart
    /// policy): not recorded as a call; emits a start event.
    pub fn external_start(&self, name: &str) -> bool {
        let run = {
            let mut state = self.state();
            match state.containers.get(name) {
                Some(c) if c.status != Status::Running => state.begin_run(name),
                _ => None,
            }
        };
        if let Some(run) = run {
            self.arm_scripted_exit(name, run);
        }
        run.is_some()
    }

    /// Ends the current run of `name` with `code` behind the host's back
    /// (a crash): not recorded as a call.
    pub fn external_exit(&self, name: &str, code: i64) {
        self.state().end_run(name, code);
        self.shared.changed.notify_waiters();
        self.shared.outputs.wake();
    }

    pub(super) fn arm_scripted_exit(&self, name: &str, run: u64) {
        let script = self.state().exit_scripts.get(name).copied();
        if let Some((code, after)) = script {
            self.arm_exit(name, run, code, after);
        }
    }

    fn arm_exit(&self, name: &str, run: u64, code: i64, after: Duration) {
        let this = self.clone();
        let name = name.to_owned();
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            let mut state = this.state();
            if state.containers.get(&name).is_some_and(|c| c.run == run) {
                state.end_run(&name, code);
            }
            drop(state);
            this.shared.changed.notify_waiters();
            this.shared.outputs.wake();
        });
    }
}
