//! Histograms of what steps' fires took and used, one per step and family,
//! with fixed buckets: a series per bucket, never one per fire. A step's
//! histogram has series once it has counted something (a step that never
//! ran, or never held anything, adds none): on a node of thousands of steps
//! each costs about 40 series, so the buckets are few.
//!
//! The counts are kept in the state directory with the other counters
//! ([`super::counters`]), so they outlive a restart of the daemon like a
//! Prometheus client's would outlive nothing: a `rate()` over them needs
//! no reset. Should a release change a family's buckets, counts kept with
//! the old ones are dropped (the family starts again, which Prometheus
//! reads as a counter reset), never put in the wrong bucket.

use serde::{Deserialize, Serialize};

/// A family of histograms: its name, help and bucket bounds.
#[derive(Debug, Clone, Copy)]
pub struct Family {
    /// The metric name (`_bucket`, `_sum`, `_count` are added).
    pub name: &'static str,
    /// Its `# HELP`.
    pub help: &'static str,
    /// The upper bounds of its buckets (`le`), rising; `+Inf` is added.
    pub bounds: &'static [f64],
}

const MIB: f64 = 1024.0 * 1024.0;

/// How long a fire took, its window included.
pub const DURATION: Family = Family {
    name: "mesh_host_step_duration_seconds",
    help: "How long the step's fires took, their maintenance window included (skipped fires are not counted).",
    bounds: &[
        1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 1800.0, 3600.0, 7200.0, 21600.0,
    ],
};

/// The CPU time of a fire, user and system.
pub const CPU: Family = Family {
    name: "mesh_host_step_cpu_seconds",
    help: "CPU time (user and system) of the step's runs, read from each fire's own cgroup.",
    bounds: &[0.1, 1.0, 10.0, 60.0, 300.0, 900.0, 3600.0],
};

/// The peak memory of a fire.
pub const MEMORY_PEAK: Family = Family {
    name: "mesh_host_step_memory_peak_bytes",
    help: "Peak memory of the step's runs, read from each fire's own cgroup.",
    bounds: &[
        16.0 * MIB,
        64.0 * MIB,
        256.0 * MIB,
        512.0 * MIB,
        1024.0 * MIB,
        2048.0 * MIB,
        4096.0 * MIB,
        16384.0 * MIB,
    ],
};

/// How long a fire's window held its containers stopped.
pub const HELD: Family = Family {
    name: "mesh_host_step_held_seconds",
    help: "How long the step's maintenance windows held their containers stopped, from opening to close.",
    bounds: &[1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0],
};

/// Every family, in the order the text gives them.
pub const FAMILIES: [Family; 4] = [DURATION, CPU, MEMORY_PEAK, HELD];

/// The counts of one histogram.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Histogram {
    /// Observations per bucket (not cumulative), the last past every bound.
    #[serde(default)]
    pub counts: Vec<u64>,
    /// The sum of the observations.
    #[serde(default)]
    pub sum: f64,
}

impl Histogram {
    /// Count `value` in `family`'s buckets; a value that is not a finite
    /// number at least 0 is not counted.
    pub fn observe(&mut self, family: &Family, value: f64) {
        if !value.is_finite() || value < 0.0 {
            return;
        }
        let n = family.bounds.len() + 1;
        if self.counts.len() != n {
            // None yet, or kept with other buckets: start again.
            *self = Histogram {
                counts: vec![0; n],
                sum: 0.0,
            };
        }
        let i = family
            .bounds
            .iter()
            .position(|b| value <= *b)
            .unwrap_or(n - 1);
        self.counts[i] = self.counts[i].saturating_add(1);
        self.sum += value;
    }

    /// Cumulative counts, one per bound and one for `+Inf`, and the sum:
    /// all zero when none was counted with `family`'s buckets.
    pub fn cumulative(&self, family: &Family) -> (Vec<u64>, f64) {
        let n = family.bounds.len() + 1;
        if self.counts.len() != n {
            return (vec![0; n], 0.0);
        }
        let mut total = 0u64;
        let cumulative = self
            .counts
            .iter()
            .map(|c| {
                total = total.saturating_add(*c);
                total
            })
            .collect();
        (cumulative, self.sum)
    }

    /// Whether nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.counts.iter().all(|c| *c == 0)
    }

    /// Whether something was counted with `family`'s buckets: what
    /// [`Histogram::cumulative`] would give a non-zero count for, found
    /// without building it.
    pub fn counted(&self, family: &Family) -> bool {
        self.counts.len() == family.bounds.len() + 1 && !self.is_empty()
    }
}

/// The `le` label of a bound as Prometheus' clients write it.
pub fn le(bound: f64) -> String {
    format!("{bound}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn observations_land_in_their_bucket_and_add_up() {
        let mut h = Histogram::default();
        for v in [0.05, 0.1, 0.7, 4.0, 5000.0] {
            h.observe(&CPU, v);
        }
        let (c, sum) = h.cumulative(&CPU);
        // le 0.1 holds 0.05 and 0.1 (a bound is inclusive).
        assert_eq!(c, vec![2, 3, 4, 4, 4, 4, 4, 5]);
        assert!((sum - 5004.85).abs() < 1e-9);
        h.observe(&CPU, f64::NAN);
        h.observe(&CPU, -1.0);
        assert_eq!(h.cumulative(&CPU).0[7], 5, "not a value: not counted");
    }

    #[test]
    fn counts_kept_with_other_buckets_start_again() {
        let kept = Histogram {
            counts: vec![1, 2, 3],
            sum: 9.0,
        };
        assert_eq!(kept.cumulative(&DURATION), (vec![0; 11], 0.0));
        let mut h = kept;
        h.observe(&DURATION, 2.0);
        assert_eq!(h.cumulative(&DURATION).0[10], 1);
        assert_eq!(h.sum, 2.0);
    }

    #[test]
    fn bounds_rise() {
        for f in FAMILIES {
            assert!(f.bounds.windows(2).all(|w| w[0] < w[1]), "{}", f.name);
        }
        assert_eq!(le(16.0 * MIB), "16777216");
        assert_eq!(le(0.1), "0.1");
    }

    proptest! {
        #[test]
        fn the_last_cumulative_count_is_every_observation(values in proptest::collection::vec(0.0f64..1e12, 0..50)) {
            let mut h = Histogram::default();
            for v in &values {
                h.observe(&MEMORY_PEAK, *v);
            }
            let (c, _) = h.cumulative(&MEMORY_PEAK);
            prop_assert_eq!(c[c.len() - 1], values.len() as u64);
            prop_assert!(c.windows(2).all(|w| w[0] <= w[1]));
        }
    }
}
