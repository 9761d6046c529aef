//! What a dead superseded owner left stopped, against the scripted
//! runtime: started again when no window holds it, and alerted, never
//! left in silence, when the records cannot tell whether one does.

use std::sync::Arc;

use super::alerts::{self, Alerter};
use super::record::tests::sample;
use super::records::Records;
use super::restore::Restorer;
use crate::runtime::fake::FakeRuntime;
use crate::schedule::tests::spec;
use crate::store::{boot_id, Store};

/// A restorer over a fresh state directory, and a runtime where both
/// containers `sample` holds are stopped.
fn rig() -> (tempfile::TempDir, Store, Records, FakeRuntime, Restorer) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().join("state")).expect("store");
    let records = Records::of(&store);
    let fake = FakeRuntime::new();
    fake.add_image("img@sha256:00");
    for name in ["mesh-db", "mesh-cache"] {
        fake.add_container(spec(name), false);
    }
    let restorer = Restorer::new(
        records.clone(),
        Arc::new(fake.clone()),
        Alerter::new(store.clone()),
        boot_id().expect("boot id"),
    );
    (dir, store, records, fake, restorer)
}

#[tokio::test]
async fn what_a_dead_owner_left_stopped_is_started_when_no_window_holds_it() {
    let (_dir, store, _records, fake, restorer) = rig();
    restorer
        .restore_after_superseded(&sample(&boot_id().expect("boot id")))
        .await;
    assert!(fake.is_running("mesh-db") && fake.is_running("mesh-cache"));
    assert!(alerts::since(&store, None).expect("alerts").is_empty());
}

#[tokio::test(start_paused = true)]
async fn what_a_dead_owner_left_stopped_is_alerted_when_the_records_cannot_be_locked() {
    // windows.lock held by a stranger past the restore's budget: whether a
    // window holds them cannot be told, so neither is started (it could
    // run beside that window's step) and each is alerted.
    let (_dir, store, records, fake, restorer) = rig();
    let _stranger = records.lock().expect("windows.lock");
    restorer
        .restore_after_superseded(&sample(&boot_id().expect("boot id")))
        .await;
    assert!(!fake.is_running("mesh-db") && !fake.is_running("mesh-cache"));
    let alerts = alerts::since(&store, None).expect("alerts");
    for name in ["mesh-db", "mesh-cache"] {
        assert!(
            alerts.iter().any(|a| a.container.as_deref() == Some(name)
                && a.message.contains("WILL NOT START AGAIN")
                && a.message.contains("cannot be locked")),
            "{name}: {alerts:?}"
        );
    }
}
