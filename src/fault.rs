//! Faults injected on purpose, for the node tests: debug builds only.
//!
//! `MESH_HOST_FAULT=FAULT:STEP` in the daemon's environment makes every
//! fire of STEP panic at one point, as a bug there would, so that what
//! frees the step and closes its window is proven on a real node
//! (tests/window_faults.rs):
//!
//! - `panic-in-step-run`: in the task that runs the step container, once
//!   it runs; the fire catches it, stops the step and closes the window;
//! - `panic-in-fire`: in the fire itself, once the step has ended and
//!   before its window closes; the scheduler catches it, frees the step
//!   and hands the window to the adopter, which closes it.
//!
//! - `pause-after-unit` (a pause, not a panic): in a fire whose transient
//!   unit has started, before its container is created (or, made ready and
//!   looked at ahead, started), for a minute.
//! - `pause-before-stop` (a pause): in an opening window, between the
//!   check that the window is still its own and the stop of a held
//!   container, for a minute: a node test stops the process there
//!   (SIGSTOP) until its lease lapses, so that its stop lands late.
//!
//! - `pause-after-stop` (a pause): in an opening window, once a stop of
//!   a held container has returned and before the owner looks again
//!   whether the window is still its own, for a minute: a node test kills
//!   the process there, its late stop landed. Pauses may be combined,
//!   separated by commas (`pause-before-stop:S,pause-after-stop:S`).
//!
//! - `pause-in-records-lock` (a pause): in an opening window, with the
//!   apply lock and `windows.lock` held, for a minute: a node test stops
//!   the process there (SIGSTOP), a holder of the lock that never lets go
//!   (tests/lock_hostage_node.rs).
//!
//! - `pause-before-naming` (a pause), on a container's name: a container of
//!   network `none` made whole under its making name, not yet renamed to
//!   its own (src/runtime/docker/network_none.rs), for a minute: a node
//!   test kills the process there.
//!
//! - `pause-before-replacing` and `pause-before-removing-replaced` (pauses),
//!   on a container's name: a replace (src/runtime/replace.rs) that has set
//!   the old container aside under its replaced name and not yet created
//!   the new one, or created it and not yet removed the old one, for a
//!   minute: a node test kills the process there.
//!
//! - `pause-after-recording`, `pause-before-judging`,
//!   `pause-before-removing-refused` and `pause-before-putting-back`
//!   (pauses), on a container's name: a replacement gated on health
//!   recorded and the old container not yet stopped, or the new container
//!   made and not yet started, or a roll back with its refusal recorded
//!   and the new one not yet removed, or with the new one removed and the
//!   old one not yet renamed back (src/apply/execute/rollout.rs,
//!   src/runtime/replace.rs), for a minute: a node test kills the process
//!   there, or cuts the node's power (tests/rollout_faults_node.rs).
//!
//! - `pause-before-reloading:sighup` (a pause): the daemon's main loop,
//!   given SIGHUP, before it says `RELOADING=1`, for a minute: a daemon
//!   slow to take the signal, which a bare `kill -HUP` as `ExecReload=`
//!   lets `systemctl reload` return before (tests/daemon_node.rs).
//!
//! - `pause-in-output:import` (a pause): `import -o FILE` with half of
//!   the declaration written, for a minute: a node test signals the
//!   process there (tests/cli.rs), and nothing of it may be left.
//!
//! `MESH_HOST_MAKING_GRACE_SECS=N` shortens the age (ten minutes) at which
//! an apply takes a container under a making name for one an interrupted
//! create left, so that a node test need not wait for it
//! (tests/apply_docker.rs).
//!
//! `MESH_HOST_CLOSE_BUDGET_SECS=N` shortens the closing budget every close
//! spends (confirming a lost step stopped, starting what a window held,
//! whoever closes it) from five minutes to N seconds, so that a node test can spend it while
//! Docker is away (tests/docker_outage.rs).
//!
//! Release builds — the packages — compile every fault point to nothing
//! and never read these variables.

use std::time::Duration;

/// Panic here when the environment asks for fault `name` on `subject`.
#[cfg(debug_assertions)]
pub fn point(name: &str, subject: &str) {
    let asked =
        std::env::var("MESH_HOST_FAULT").is_ok_and(|v| v.split_once(':') == Some((name, subject)));
    if asked {
        panic!("injected fault {name} in {subject} (MESH_HOST_FAULT)");
    }
}

/// Pause here (a minute) when the environment asks for fault `name` on
/// `subject`: a moment a node test kills the process in
/// (`pause-after-unit`: a fire whose scope started and whose container is
/// not created yet; `pause-before-stop`: a window past its fence check,
/// its stop not sent; `pause-before-start`, on a held container's name: a
/// close about to start it, its record already marking it `starting`;
/// `pause-before-naming`, on a container's name: made whole under its
/// making name, not yet renamed; `pause-before-replacing` and
/// `pause-before-removing-replaced`, on a container's name: the old one set
/// aside, the new one not made, or made and the old one not removed;
/// `pause-in-network-remake`, on a network's name: its containers
/// detached and the network removed, not yet made again).
#[cfg(debug_assertions)]
pub async fn pause(name: &str, subject: &str) {
    // Several pauses may be asked at once, separated by commas.
    let asked = std::env::var("MESH_HOST_FAULT").is_ok_and(|v| {
        v.split(',')
            .any(|f| f.split_once(':') == Some((name, subject)))
    });
    if asked {
        tracing::warn!("pausing at {name} in {subject} (MESH_HOST_FAULT)");
        tokio::time::sleep(Duration::from_secs(60)).await;
    }
}

/// [`pause`] for code that does not run on the async runtime: blocks the
/// thread (`pause-in-output`, on `import`: its `-o` file half written).
#[cfg(debug_assertions)]
pub fn pause_blocking(name: &str, subject: &str) {
    let asked = std::env::var("MESH_HOST_FAULT").is_ok_and(|v| {
        v.split(',')
            .any(|f| f.split_once(':') == Some((name, subject)))
    });
    if asked {
        tracing::warn!("pausing at {name} in {subject} (MESH_HOST_FAULT)");
        std::thread::sleep(Duration::from_secs(60));
    }
}

/// Release builds: never pauses.
#[cfg(not(debug_assertions))]
#[inline(always)]
pub fn pause_blocking(_name: &str, _subject: &str) {}

/// Release builds: never pauses.
#[cfg(not(debug_assertions))]
#[inline(always)]
pub async fn pause(_name: &str, _subject: &str) {}

/// Release builds: no fault is ever injected.
#[cfg(not(debug_assertions))]
#[inline(always)]
pub fn point(_name: &str, _subject: &str) {}

/// How old a container left under a making name must be before an apply
/// removes it: `grace`, or what `MESH_HOST_MAKING_GRACE_SECS` says (debug
/// builds only).
#[cfg(debug_assertions)]
pub fn making_grace(grace: Duration) -> Duration {
    std::env::var("MESH_HOST_MAKING_GRACE_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(grace, Duration::from_secs)
}

/// Release builds: always `grace`.
#[cfg(not(debug_assertions))]
#[inline(always)]
pub fn making_grace(grace: Duration) -> Duration {
    grace
}

/// How far ahead a step's fire is armed (`schedule::ready::HORIZON`):
/// `horizon`, or what `MESH_HOST_ARM_HORIZON_SECS` says (debug builds
/// only), so that a node test sees a step come within it in seconds.
#[cfg(debug_assertions)]
pub fn arm_horizon(horizon: Duration) -> Duration {
    std::env::var("MESH_HOST_ARM_HORIZON_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(horizon, Duration::from_secs)
}

/// Release builds: always `horizon`.
#[cfg(not(debug_assertions))]
#[inline(always)]
pub fn arm_horizon(horizon: Duration) -> Duration {
    horizon
}

/// The closing budget a close spends: `budget`, or what
/// `MESH_HOST_CLOSE_BUDGET_SECS` says (debug builds only).
#[cfg(debug_assertions)]
pub fn close_budget(budget: Duration) -> Duration {
    std::env::var("MESH_HOST_CLOSE_BUDGET_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(budget, Duration::from_secs)
}

/// Release builds: always `budget`.
#[cfg(not(debug_assertions))]
#[inline(always)]
pub fn close_budget(budget: Duration) -> Duration {
    budget
}
