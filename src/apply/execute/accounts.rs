//! Identities' accounts made and removed through the account tools, and
//! the record of what the host made ([`ACCOUNTS`]) kept with them: a
//! removal removes only what the host made, and only if it still has the
//! numbers the host gave it. The tools wait on the account files' lock:
//! they run on a blocking thread, not one of the runtime's workers.

use super::super::decide::made_what;
use super::super::records::{self, MadeAccount, ACCOUNTS};
use super::super::report::Action;
use super::outcome::Outcome;
use super::tools::Tools;
use crate::accounts::{AccountTools, Made};
use crate::declaration::Identity;

fn record(tools: &Tools) -> Result<records::Accounts, String> {
    tools
        .store
        .load::<records::Accounts>(ACCOUNTS)
        .map(Option::unwrap_or_default)
        .map_err(|e| e.to_string())
}

/// Make what is missing of `identity`, and record what was made.
pub(super) async fn identity(tools: &Tools, id: &str, identity: &Identity) -> Outcome {
    let mut recorded = match record(tools) {
        Ok(r) => r,
        Err(e) => return Outcome::failed(e),
    };
    let (owned, accounts) = (identity.clone(), tools.accounts.clone());
    let made = tokio::task::spawn_blocking(move || {
        let found = accounts.read()?;
        AccountTools::make(&*accounts, &owned, &found)
    })
    .await
    .unwrap_or_else(|e| Err(format!("making the account did not finish: {e}")));
    let made = match made {
        Ok(made) => made,
        Err(e) => return Outcome::failed_at(0, e),
    };
    if made == Made::default() {
        // Made meanwhile by someone else: nothing left to make.
        return Outcome::new(Action::Unchanged, None);
    }
    let name = identity.name.to_string();
    let before = recorded.get(&name).cloned();
    recorded.insert(
        name.clone(),
        MadeAccount {
            id: id.to_string(),
            uid: identity.uid,
            gid: identity.gid,
            user: made.user || before.as_ref().is_some_and(|b| b.user),
            group: made.group || before.as_ref().is_some_and(|b| b.group),
        },
    );
    if let Err(e) = tools.store.save(ACCOUNTS, &recorded) {
        return Outcome::failed_at(0, format!("made {name}, but cannot record it: {e}"));
    }
    let what = made_what(&made);
    Outcome::new(
        Action::Created,
        Some(format!("{what} {name} {}:{}", identity.uid, identity.gid)),
    )
}

/// Remove what the host made of an account no identity declares now.
pub(super) async fn remove(tools: &Tools, name: &str, m: &MadeAccount) -> Outcome {
    let made = Made {
        user: m.user,
        group: m.group,
    };
    let (who, uid, gid, accounts) = (name.to_string(), m.uid, m.gid, tools.accounts.clone());
    let removed = tokio::task::spawn_blocking(move || accounts.remove(&who, uid, gid, made))
        .await
        .unwrap_or_else(|e| Err(format!("removing the account did not finish: {e}")));
    if let Err(e) = removed {
        return Outcome::failed_at(0, format!("cannot remove {name}: {e}"));
    }
    let mut outcome = Outcome::new(Action::Removed, Some(format!("account {name}")));
    let forgotten = record(tools).and_then(|mut recorded| {
        recorded.remove(name);
        tools
            .store
            .save(ACCOUNTS, &recorded)
            .map_err(|e| e.to_string())
    });
    if let Err(e) = forgotten {
        outcome
            .records
            .push(super::outcome::Record::Warning(format!(
                "cannot record the accounts removed: {e}"
            )));
    }
    outcome
}
