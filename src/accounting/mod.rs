//! What each fire used: CPU time, peak memory, bytes read and written,
//! and whether the kernel's OOM killer ended it.
//!
//! Every fire runs in a transient unit of its own (a scope per fire with
//! Docker's cgroupfs driver, the step's slice with the systemd driver,
//! where the runtime's own scope for the container sits below it), so the
//! unit's cgroup holds exactly the step's processes, and the kernel's
//! hierarchical counters of that cgroup are the fire's figures. The
//! container's own cgroup cannot be read for them: the runtime removes it
//! as the container exits, before anyone is told of the exit; the unit's
//! outlives it until the fire ends it.
//!
//! A [`Meter`] reads the unit's cgroup once before the container starts
//! and once after it exited, before the unit goes ([`cgroup`]): CPU time,
//! I/O and OOM kills are the difference; the peak is the unit's own less
//! what the unit held before the container started (a scope's keeper, a
//! `cat` blocked on a pipe), which is the fire's when the unit is new for
//! it (a fire's scope always is; a step's slice is started afresh for each
//! fire when nothing holds it, see [`crate::systemd::fresh_slice`]). A
//! peak that cannot be told apart from an earlier fire's is not given. The runtime's word on an
//! OOM kill (Docker's and Podman's `OOMKilled`) counts too: on cgroup v1
//! only the container's own group, gone by then, counted the kill.

pub mod cgroup;
pub mod parse;

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::runtime::ContainerRuntime;

pub use cgroup::{Cgroups, Sample};

/// How long the runtime is given to say whether the OOM killer ended a
/// run.
const OOM_ASK: Duration = Duration::from_secs(5);

/// The figures of one fire. A figure the node could not measure is `None`
/// (and absent from the journal entry, the JSON and the metrics), never 0.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Usage {
    /// CPU time, user and system, in microseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_usec: Option<u64>,
    /// Of it, in user mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_user_usec: Option<u64>,
    /// Of it, in the kernel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_system_usec: Option<u64>,
    /// The highest memory use of the fire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_peak_bytes: Option<u64>,
    /// The step's declared `memory` limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_limit_bytes: Option<u64>,
    /// Bytes read from block devices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io_read_bytes: Option<u64>,
    /// Bytes written to block devices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io_write_bytes: Option<u64>,
    /// Whether the kernel's OOM killer killed a process of the fire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oom_killed: Option<bool>,
}

/// A peak a unit had before its fire at most this high is next to nothing
/// (a fire's scope holds its keeper, a `cat` blocked on a pipe, before the
/// container starts): the peak read after is the fire's.
const FRESH_PEAK: u64 = 1 << 20;

/// How the fire's container ended, as the fire knows it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct End {
    /// The runtime's word on an OOM kill (`None`: it did not answer).
    pub oom_by_runtime: Option<bool>,
    /// It exited killed by SIGKILL (status 137) that mesh-host did not send.
    pub sigkilled: bool,
    /// The step's declared memory limit.
    pub limit: Option<u64>,
}

/// Measures one fire on its unit's cgroup.
#[derive(Debug)]
pub struct Meter {
    cgroups: Cgroups,
    group: Option<String>,
    before: Sample,
}

impl Meter {
    /// Read `group` (the unit's `ControlGroup`; `None`: the fire has no
    /// unit) before the container starts, `holder` (a process of the
    /// unit's that outlives the container) put in it wherever the group
    /// would otherwise go once emptied ([`Cgroups::hold`]).
    pub fn start(group: Option<&str>, holder: Option<u32>) -> Meter {
        let cgroups = Cgroups::default();
        if let Some((g, pid)) = group.zip(holder) {
            if let Err(e) = cgroups.hold(g, pid) {
                tracing::warn!("{e}: the fire's figures may be missing");
            }
        }
        Meter::start_in(cgroups, group)
    }

    /// [`Meter::start`] on the cgroup file systems of `cgroups`.
    pub fn start_in(cgroups: Cgroups, group: Option<&str>) -> Meter {
        let before = group.map_or_else(Sample::default, |g| read(&cgroups, g));
        Meter {
            cgroups,
            group: group.map(str::to_string),
            before,
        }
    }

    /// [`Meter::finish`] for the run of container `name`, which exited
    /// with `exit` by itself (`None`: it was stopped, or lost), its limit
    /// `limit`: the runtime is asked whether the OOM killer ended it,
    /// briefly, since the window's close waits for the answer.
    pub async fn finish_run(
        self,
        runtime: &dyn ContainerRuntime,
        name: &str,
        exit: Option<i64>,
        limit: Option<u64>,
    ) -> Usage {
        let oom_by_runtime = match exit {
            Some(_) => tokio::time::timeout(OOM_ASK, runtime.inspect(name))
                .await
                .ok()
                .and_then(Result::ok)
                .flatten()
                .map(|i| i.oom_killed),
            None => None,
        };
        self.finish(End {
            oom_by_runtime,
            sigkilled: exit == Some(137),
            limit,
        })
    }

    /// Read the group again, the container having exited, and give the
    /// fire's figures.
    pub fn finish(self, end: End) -> Usage {
        let after = self
            .group
            .as_deref()
            .map_or_else(Sample::default, |g| read(&self.cgroups, g));
        usage(&self.before, &after, end)
    }
}

fn read(cgroups: &Cgroups, group: &str) -> Sample {
    cgroups.read(group).unwrap_or_else(|e| {
        tracing::debug!("no figures for the fire's unit: {e}");
        Sample::default()
    })
}

/// The figures of a fire from its unit's counters before and after.
///
/// An OOM kill is the kernel's word (the unit's `oom_kill`, which on
/// cgroup v2 counts the container's below it) or the runtime's. On cgroup
/// v1 the kernel counts a kill in the container's own group alone, gone
/// by now, and Podman 4.3 does not say: there a run that ended by SIGKILL,
/// with its peak at its limit, while the node counted an OOM kill, was
/// ended by the OOM killer.
pub fn usage(before: &Sample, after: &Sample, end: End) -> Usage {
    // A counter absent before is one the fire's unit made: from zero.
    let delta = |b: Option<u64>, a: Option<u64>| a?.checked_sub(b.unwrap_or(0));
    let memory_peak_bytes = peak(before, after.memory_peak_bytes);
    let at_limit = memory_peak_bytes
        .zip(end.limit)
        .is_some_and(|(p, l)| p.saturating_add(FRESH_PEAK) >= l);
    let node_oom = delta(before.node_oom_kills, after.node_oom_kills).is_some_and(|n| n > 0);
    let kernel_oom = delta(before.oom_kills, after.oom_kills)
        .map(|n| n > 0 || (end.sigkilled && at_limit && node_oom));
    let oom = end.oom_by_runtime;
    Usage {
        cpu_usec: delta(before.cpu_usec, after.cpu_usec),
        cpu_user_usec: delta(before.cpu_user_usec, after.cpu_user_usec),
        cpu_system_usec: delta(before.cpu_system_usec, after.cpu_system_usec),
        memory_peak_bytes,
        memory_limit_bytes: end.limit,
        io_read_bytes: delta(before.io.map(|i| i.read), after.io.map(|i| i.read)),
        io_write_bytes: delta(before.io.map(|i| i.written), after.io.map(|i| i.written)),
        oom_killed: match (kernel_oom, oom) {
            (Some(true), _) | (_, Some(true)) => Some(true),
            (None, None) => None,
            _ => Some(false),
        },
    }
}

/// The fire's peak: the unit's after it less what the unit held before
/// the container started, unless the unit had a higher or equal peak
/// before that was not next to nothing (a slice reused while another
/// fire's unit held it): then it is not known.
fn peak(before: &Sample, after: Option<u64>) -> Option<u64> {
    let after = after?;
    match before.memory_peak_bytes {
        Some(b) if after <= b && b > FRESH_PEAK => None,
        _ => Some(after.saturating_sub(before.memory_now_bytes.unwrap_or(0))),
    }
}

impl Usage {
    /// Whether any figure is known.
    pub fn is_empty(&self) -> bool {
        *self
            == Usage {
                memory_limit_bytes: self.memory_limit_bytes,
                ..Usage::default()
            }
    }

    /// `peak 240.0 MiB of 256 MiB`, or `peak 240.0 MiB`.
    pub fn peak_text(&self) -> Option<String> {
        let peak = self.memory_peak_bytes?;
        Some(match self.memory_limit_bytes {
            Some(limit) => format!("peak {} of {}", bytes(peak), bytes(limit)),
            None => format!("peak {}", bytes(peak)),
        })
    }

    /// The figures in words: `CPU 8.1 s, peak 240.0 MiB of 256 MiB, read
    /// 1.2 MiB, written 0 B`; empty when none is known.
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        if let Some(us) = self.cpu_usec {
            parts.push(format!("CPU {}", seconds(us)));
        }
        parts.extend(self.peak_text());
        if let Some(n) = self.io_read_bytes {
            parts.push(format!("read {}", bytes(n)));
        }
        if let Some(n) = self.io_write_bytes {
            parts.push(format!("written {}", bytes(n)));
        }
        if self.oom_killed == Some(true) {
            parts.push("a process OOM-killed".into());
        }
        parts.join(", ")
    }

    /// What an OOM kill that ended a fire is called: `killed by the kernel:
    /// out of memory, peak 255.9 MiB of its 256 MiB limit`.
    pub fn oom_text(peak: Option<u64>, limit: Option<u64>) -> String {
        let mut s = "killed by the kernel: out of memory".to_string();
        match (peak, limit) {
            (Some(p), Some(l)) => s += &format!(", peak {} of its {} limit", bytes(p), bytes(l)),
            (Some(p), None) => s += &format!(", peak {}", bytes(p)),
            (None, Some(l)) => s += &format!(", its limit {}", bytes(l)),
            (None, None) => {}
        }
        s
    }
}

/// Bytes for people: `0 B`, `512 B`, `1.2 KiB`, `255.9 MiB`, `256 MiB`
/// (a whole number shown whole).
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 || value.fract() == 0.0 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        // Never rounded up to the next whole: 255.96 MiB is 255.9, not 256.0.
        format!("{:.1} {}", (value * 10.0).floor() / 10.0, UNITS[unit])
    }
}

/// Microseconds as seconds for people: `0.042 s`, `8.1 s`, `1234 s`.
pub fn seconds(usec: u64) -> String {
    let s = usec as f64 / 1e6;
    if s < 1.0 {
        format!("{s:.3} s")
    } else if s < 100.0 {
        format!("{s:.1} s")
    } else {
        format!("{s:.0} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accounting::parse::Io;

    fn end(oom_by_runtime: Option<bool>, limit: Option<u64>) -> End {
        End {
            oom_by_runtime,
            sigkilled: false,
            limit,
        }
    }

    fn sample(cpu: u64, peak: u64, oom: u64) -> Sample {
        Sample {
            cpu_usec: Some(cpu),
            cpu_user_usec: Some(cpu / 2),
            cpu_system_usec: Some(cpu - cpu / 2),
            memory_peak_bytes: Some(peak),
            memory_now_bytes: None,
            io: Some(Io {
                read: 10,
                written: 20,
            }),
            oom_kills: Some(oom),
            node_oom_kills: None,
        }
    }

    #[test]
    fn counters_are_differences_and_a_fresh_units_peak_is_the_fires() {
        // A fire's scope: before the container, its keeper alone, which
        // holds what it held all along.
        let keeper = Sample {
            memory_now_bytes: Some(212_992),
            ..sample(100, 300_000, 0)
        };
        let u = usage(
            &keeper,
            &sample(8_100_100, 251_658_240 + 212_992, 0),
            end(Some(false), Some(256 << 20)),
        );
        assert_eq!(u.cpu_usec, Some(8_100_000));
        assert_eq!(u.memory_peak_bytes, Some(251_658_240));
        assert_eq!(u.io_read_bytes, Some(0));
        assert_eq!(u.oom_killed, Some(false));
        assert_eq!(
            u.summary(),
            "CPU 8.1 s, peak 240 MiB of 256 MiB, read 0 B, written 0 B"
        );
    }

    #[test]
    fn a_unit_that_did_not_exist_before_counts_from_zero() {
        let u = usage(&Sample::default(), &sample(42, 7 << 20, 0), end(None, None));
        assert_eq!(u.cpu_usec, Some(42));
        assert_eq!(u.memory_peak_bytes, Some(7 << 20));
        assert_eq!(u.io_write_bytes, Some(20));
        assert_eq!(u.oom_killed, Some(false));
    }

    #[test]
    fn a_peak_an_earlier_fire_may_have_set_is_not_given() {
        let before = sample(5_000, 400 << 20, 0);
        // Lower than before: this fire's own is not known.
        assert_eq!(
            usage(&before, &sample(6_000, 400 << 20, 0), end(None, None)).memory_peak_bytes,
            None
        );
        // Higher: it is this fire's.
        assert_eq!(
            usage(&before, &sample(6_000, 500 << 20, 0), end(None, None)).memory_peak_bytes,
            Some(500 << 20)
        );
    }

    #[test]
    fn an_oom_kill_is_the_kernels_or_the_runtimes_word() {
        let b = sample(0, 0, 2);
        assert_eq!(
            usage(&b, &sample(1, 1, 3), end(Some(false), None)).oom_killed,
            Some(true)
        );
        assert_eq!(
            usage(&b, &sample(1, 1, 2), end(Some(true), None)).oom_killed,
            Some(true)
        );
        assert_eq!(
            usage(&b, &sample(1, 1, 2), end(None, None)).oom_killed,
            Some(false)
        );
        let none = Sample::default();
        assert_eq!(usage(&none, &none, end(None, None)).oom_killed, None);
        assert!(usage(&none, &none, end(None, Some(1))).is_empty());
    }

    #[test]
    fn on_v1_a_sigkill_at_the_limit_while_the_node_counted_an_oom_kill_is_one() {
        // What a Podman fire on cgroup v1 leaves: the unit's own count
        // stays, the runtime says nothing, the node counted one kill.
        let limit = Some(64 << 20);
        let before = Sample {
            node_oom_kills: Some(7),
            ..sample(0, 0, 0)
        };
        let after = |peak: u64, node: u64| Sample {
            node_oom_kills: Some(node),
            ..sample(50_000, peak, 0)
        };
        let killed = End {
            oom_by_runtime: Some(false),
            sigkilled: true,
            limit,
        };
        let at_limit = (64 << 20) + 8192;
        assert_eq!(
            usage(&before, &after(at_limit, 8), killed).oom_killed,
            Some(true)
        );
        // Each fact alone is not one.
        assert_eq!(
            usage(&before, &after(at_limit, 7), killed).oom_killed,
            Some(false)
        );
        assert_eq!(
            usage(&before, &after(40 << 20, 8), killed).oom_killed,
            Some(false)
        );
        let not_killed = End {
            sigkilled: false,
            ..killed
        };
        assert_eq!(
            usage(&before, &after(at_limit, 8), not_killed).oom_killed,
            Some(false)
        );
        let no_limit = End {
            limit: None,
            ..killed
        };
        assert_eq!(
            usage(&before, &after(at_limit, 8), no_limit).oom_killed,
            Some(false)
        );
    }

    #[test]
    fn a_counter_that_went_backwards_is_not_a_figure() {
        // Another cgroup by the same name: nothing of it is this fire's.
        let u = usage(&sample(9_000, 0, 0), &sample(10, 0, 0), end(None, None));
        assert_eq!(u.cpu_usec, None);
    }

    #[test]
    fn words() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(1023), "1023 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(256 << 20), "256 MiB");
        assert_eq!(bytes((256 << 20) - 100_000), "255.9 MiB");
        assert_eq!(bytes((256 << 20) - 1), "255.9 MiB");
        assert_eq!(seconds(42_000), "0.042 s");
        assert_eq!(seconds(8_100_000), "8.1 s");
        assert_eq!(seconds(1_234_000_000), "1234 s");
        assert_eq!(
            Usage::oom_text(Some((256 << 20) - 100_000), Some(256 << 20)),
            "killed by the kernel: out of memory, peak 255.9 MiB of its 256 MiB limit"
        );
        assert_eq!(
            Usage::oom_text(None, None),
            "killed by the kernel: out of memory"
        );
    }

    #[test]
    fn a_meter_reads_its_units_tree() {
        let root =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/accounting/fixtures/hybrid");
        let group = "/mesh.slice/mesh-host.slice/mesh-host-step-gc-20260601T030000Z.scope";
        // Started before the unit's tree had anything: every figure from zero.
        let meter = Meter {
            cgroups: Cgroups::at(&root),
            group: Some(group.into()),
            before: Sample::default(),
        };
        let u = meter.finish(end(Some(false), None));
        assert_eq!(u.cpu_usec, Some(282_210));
        assert_eq!(u.memory_peak_bytes, Some(52_064_256));
        // Started and finished on the same counters: nothing used.
        let u = Meter::start_in(Cgroups::at(&root), Some(group)).finish(End::default());
        assert_eq!(u.cpu_usec, Some(0));
        // A peak that was there already, and not next to nothing: not known.
        assert_eq!(u.memory_peak_bytes, None);
    }
}
