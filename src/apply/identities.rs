//! Identities: a system account and group with the declared numbers, made
//! through the system's tools ([`crate::accounts`]). The store document
//! [`ACCOUNTS`] records what the host made, so that removing the resource
//! removes only that: an account that existed before is left.
//!
//! | found | action |
//! |---|---|
//! | account and group as declared | `unchanged` |
//! | missing (either) | made: `created` |
//! | name or numbers taken otherwise | `failed`, naming both parties |
//! | recorded as made, no longer declared | `removed` (if it still has its numbers) |

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::state::ACCOUNTS;
use super::{Action, Run};
use crate::accounts::{self, Accounts, Made};
use crate::declaration::{Identity, ResourceKind};

/// One account (and/or group) the host made, by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MadeAccount {
    /// The resource it was made for.
    pub id: String,
    /// Its uid.
    pub uid: u32,
    /// Its gid.
    pub gid: u32,
    /// The host added the account.
    pub user: bool,
    /// The host added the group.
    pub group: bool,
}

type Record = BTreeMap<String, MadeAccount>;

impl Run<'_> {
    fn made_accounts(&mut self, id: &str) -> Option<Record> {
        match self.applier.store.load::<Record>(ACCOUNTS) {
            Ok(r) => Some(r.unwrap_or_default()),
            Err(e) => {
                self.push(id, Action::Failed, Some(e.to_string()));
                None
            }
        }
    }

    /// Converge one identity.
    pub(super) async fn identity(&mut self, id: &str, identity: &Identity) {
        let accounts = match Accounts::system() {
            Ok(a) => a,
            Err(e) => return self.push(id, Action::Failed, Some(e)),
        };
        let conflicts = accounts.conflicts(identity);
        if !conflicts.is_empty() {
            let reason = conflicts
                .into_iter()
                .map(|(_, m)| m)
                .collect::<Vec<_>>()
                .join("; ");
            return self.push(id, Action::Failed, Some(reason));
        }
        if self.preview {
            let made = accounts::to_make(identity, &accounts);
            if made == Made::default() {
                return self.push(id, Action::Unchanged, None);
            }
            let reason = format!(
                "{} {} {}:{}",
                made_what(&made),
                identity.name,
                identity.uid,
                identity.gid
            );
            return self.push(id, Action::Created, Some(reason));
        }
        let Some(mut record) = self.made_accounts(id) else {
            return;
        };
        // groupadd and useradd wait on the account files' lock: a blocking
        // thread's work, not one of the runtime's workers'.
        let (owned, found) = (identity.clone(), accounts.clone());
        let made = tokio::task::spawn_blocking(move || accounts::make(&owned, &found))
            .await
            .unwrap_or_else(|e| Err(format!("making the account did not finish: {e}")));
        let made = match made {
            Ok(made) => made,
            Err(e) => return self.push(id, Action::Failed, Some(e)),
        };
        if made == Made::default() {
            return self.push(id, Action::Unchanged, None);
        }
        let name = identity.name.to_string();
        let before = record.get(&name).cloned();
        record.insert(
            name.clone(),
            MadeAccount {
                id: id.to_string(),
                uid: identity.uid,
                gid: identity.gid,
                user: made.user || before.as_ref().is_some_and(|b| b.user),
                group: made.group || before.as_ref().is_some_and(|b| b.group),
            },
        );
        if let Err(e) = self.applier.store.save(ACCOUNTS, &record) {
            let reason = format!("made {name}, but cannot record it: {e}");
            return self.push(id, Action::Failed, Some(reason));
        }
        let what = made_what(&made);
        self.push(
            id,
            Action::Created,
            Some(format!("{what} {name} {}:{}", identity.uid, identity.gid)),
        );
    }

    /// Remove the accounts the host made that no identity declares now.
    pub(super) async fn remove_identities(&mut self) {
        let declared: Vec<String> = self
            .decl
            .resources
            .iter()
            .filter_map(|r| match &r.kind {
                ResourceKind::Identity(i) => Some(i.name.to_string()),
                _ => None,
            })
            .collect();
        let mut record = match self.applier.store.load::<Record>(ACCOUNTS) {
            Ok(Some(record)) => record,
            Ok(None) => return,
            Err(e) => {
                self.ok = false;
                self.warnings
                    .push(format!("accounts no longer declared are not removed: {e}"));
                return;
            }
        };
        let gone: Vec<(String, MadeAccount)> = record
            .iter()
            .filter(|(name, _)| !declared.contains(name))
            .map(|(n, m)| (n.clone(), m.clone()))
            .collect();
        for (name, m) in gone {
            if self.preview {
                self.push(&m.id, Action::Removed, Some(format!("account {name}")));
                continue;
            }
            let made = Made {
                user: m.user,
                group: m.group,
            };
            let (who, uid, gid) = (name.clone(), m.uid, m.gid);
            let removed =
                tokio::task::spawn_blocking(move || accounts::remove(&who, uid, gid, made))
                    .await
                    .unwrap_or_else(|e| Err(format!("removing the account did not finish: {e}")));
            match removed {
                Ok(()) => {
                    record.remove(&name);
                    self.push(&m.id, Action::Removed, Some(format!("account {name}")));
                }
                Err(e) => self.push(
                    &m.id,
                    Action::Failed,
                    Some(format!("cannot remove {name}: {e}")),
                ),
            }
        }
        if self.preview {
            return;
        }
        if let Err(e) = self.applier.store.save(ACCOUNTS, &record) {
            self.warnings
                .push(format!("cannot record the accounts removed: {e}"));
        }
    }
}

/// What was (or would be) made, in the report's words.
fn made_what(made: &Made) -> &'static str {
    match (made.user, made.group) {
        (true, true) => "account and group",
        (true, false) => "account (its group existed)",
        _ => "group (the account existed)",
    }
}
