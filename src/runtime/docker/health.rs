//! Health checks in Docker's terms: a declared check as Docker's
//! configuration (`Test` in exec form, durations in nanoseconds), and how
//! long a configured check takes at most to decide after a start.

use std::time::Duration;

use bollard::models::HealthConfig;

use crate::runtime::HealthSpec;

/// How long a health check takes at most to decide after a start (see
/// [`crate::runtime::Health::decides_within`]), from its configuration in
/// nanoseconds; Docker's defaults (30 s interval and timeout, 3 retries,
/// no start period) stand in for what is unset or zero.
pub(super) fn health_decides_within(config: Option<&HealthConfig>) -> Option<Duration> {
    let config = config?;
    let nanos = |v: Option<i64>, default: Duration| {
        v.and_then(|v| u64::try_from(v).ok())
            .filter(|v| *v > 0)
            .map_or(default, Duration::from_nanos)
    };
    let interval = nanos(config.interval, Duration::from_secs(30));
    let timeout = nanos(config.timeout, Duration::from_secs(30));
    let start_period = nanos(config.start_period, Duration::ZERO);
    let retries = config
        .retries
        .and_then(|r| u32::try_from(r).ok())
        .filter(|r| *r > 0)
        .unwrap_or(3);
    Some(start_period + (interval + timeout).saturating_mul(retries.saturating_add(1)))
}

/// A configured check's start period (zero when unset).
pub(super) fn health_start_period(config: Option<&HealthConfig>) -> Duration {
    config
        .and_then(|h| h.start_period)
        .and_then(|nanos| u64::try_from(nanos).ok())
        .map_or(Duration::ZERO, Duration::from_nanos)
}

/// Docker's form of a declared health check: `Test` with its form word,
/// durations in nanoseconds (0, Docker's "unset", where none is given).
pub(super) fn health_config(health: &HealthSpec) -> HealthConfig {
    let nanos = |d: &Option<Duration>| d.map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
    match health {
        HealthSpec::Disabled => HealthConfig {
            test: Some(vec!["NONE".to_string()]),
            ..Default::default()
        },
        HealthSpec::Check {
            command,
            interval,
            timeout,
            retries,
            start_period,
        } => HealthConfig {
            test: command.as_ref().map(|command| {
                std::iter::once("CMD".to_string())
                    .chain(command.iter().cloned())
                    .collect()
            }),
            interval: nanos(interval),
            timeout: nanos(timeout),
            retries: retries.map(i64::from),
            start_period: nanos(start_period),
            ..Default::default()
        },
    }
}
