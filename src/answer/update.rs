//! `mesh-host update [FILE]`: each container declared with `"update":
//! "registry"` and an image `REPO:TAG@sha256:…` follows its tag. The
//! registry is asked, once per tag, through the runtime
//! ([`RuntimeView::registry_digests`]) what `TAG` points to now; where it
//! moved, the new digest replaces the old one in the declaration, unless a roll back refused that very image on
//! this node (`refused.<name>.json`): it is skipped until the tag moves
//! again. The file itself is written by the command line
//! (`cli::update`): this decides and answers.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::Answer;
use crate::apply::rollouts::Refused;
use crate::declaration::{Declaration, UpdatePolicy};
use crate::exit::Exit;
use crate::runtime::RuntimeView;

/// One image whose tag moved, written into the declaration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Moved {
    /// The container's resource id.
    pub id: String,
    /// `REPO:TAG`.
    pub tag: String,
    /// The digest declared before.
    pub from: String,
    /// The digest the tag points to now.
    pub to: String,
}

/// One container that follows its tag and was left as declared, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Left {
    /// The container's resource id.
    pub id: String,
    /// `REPO:TAG`.
    pub tag: String,
    /// `current`, `refused` (a roll back refused that digest here) or
    /// `unanswered` (the registry could not be asked).
    pub why: &'static str,
    /// What was found.
    pub detail: String,
}

/// What `update` found and did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Update {
    /// The declaration file.
    pub file: String,
    /// Images whose tag moved, in declaration order.
    pub moved: Vec<Moved>,
    /// Containers left as they were.
    pub left: Vec<Left>,
    /// Where the file before this update was kept, when it was written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous: Option<String>,
}

impl Answer for Update {
    fn exit(&self) -> Exit {
        if self.left.iter().any(|l| l.why == "unanswered") {
            Exit::Failed
        } else {
            Exit::Ok
        }
    }

    fn text(&self) -> String {
        let mut out = String::new();
        for m in &self.moved {
            out.push_str(&format!(
                "{}: {} moved {} -> {}\n",
                m.id, m.tag, m.from, m.to
            ));
        }
        for l in &self.left {
            out.push_str(&format!("{}: {} {}: {}\n", l.id, l.tag, l.why, l.detail));
        }
        match &self.previous {
            Some(previous) => out.push_str(&format!(
                "update: {} moved; {} written ({previous} is the file before)\n",
                self.moved.len(),
                self.file
            )),
            None => out.push_str(&format!("update: nothing moved; {} unchanged\n", self.file)),
        }
        out
    }
}

/// Ask the registry about each container of `decl` that follows its tag;
/// `raw` (the file's JSON) gets the digests that moved. `refused`: the
/// definitions roll backs refused on this node, by container name.
pub async fn follow_tags(
    view: &dyn RuntimeView,
    decl: &Declaration,
    raw: &mut Value,
    refused: &BTreeMap<String, Refused>,
    file: &str,
) -> Update {
    let mut update = Update {
        file: file.to_string(),
        moved: Vec::new(),
        left: Vec::new(),
        previous: None,
    };
    let mut answers: BTreeMap<String, Result<Vec<String>, String>> = BTreeMap::new();
    for (res, c) in decl.containers() {
        if c.update != Some(UpdatePolicy::Registry) {
            continue;
        }
        let Some(tag) = c.image.tag() else { continue };
        let id = res.id.to_string();
        let tagged = format!("{}:{tag}", c.image.repository());
        let from = c.image.digest().to_string();
        // One question per tag, however many containers follow it.
        if !answers.contains_key(&tagged) {
            let answer = view
                .registry_digests(&tagged)
                .await
                .map_err(|e| crate::runtime::explain(&e));
            answers.insert(tagged.clone(), answer);
        }
        let to = match &answers[&tagged] {
            // The declared digest among those the tag is known by (a list
            // and its instance, on Podman): nothing moved.
            Ok(digests) if digests.contains(&from) => from.clone(),
            Ok(digests) if digests.len() == 1 => digests[0].clone(),
            Ok(digests) => {
                update.left.push(Left {
                    id,
                    tag: tagged,
                    why: "unanswered",
                    detail: format!(
                        "the tag's image is known by {} digests ({}): which to pin cannot be told; pin one by hand",
                        digests.len(),
                        digests.join(", ")
                    ),
                });
                continue;
            }
            Err(e) => {
                update.left.push(Left {
                    id,
                    tag: tagged,
                    why: "unanswered",
                    detail: e.clone(),
                });
                continue;
            }
        };
        if to == from {
            update.left.push(Left {
                id,
                tag: tagged,
                why: "current",
                detail: from,
            });
            continue;
        }
        let image = format!("{tagged}@{to}");
        if let Some(r) = refused.get(c.name.as_str()).filter(|r| r.image == image) {
            update.left.push(Left {
                id,
                tag: tagged,
                why: "refused",
                detail: format!(
                    "{to} was rolled back here ({}): skipped until the tag moves again",
                    r.reason
                ),
            });
            continue;
        }
        set_image(raw, &id, &image);
        update.moved.push(Moved {
            id,
            tag: tagged,
            from,
            to,
        });
    }
    update
}

/// Set the image of resource `id` in the declaration's JSON.
pub fn set_image(raw: &mut Value, id: &str, image: &str) {
    let resources = raw.get_mut("resources").and_then(Value::as_array_mut);
    for res in resources.into_iter().flatten() {
        if res.get("id").and_then(Value::as_str) == Some(id) {
            res["image"] = Value::String(image.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::fake::FakeRuntime;
    use serde_json::json;

    const OLD: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
    const NEW: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";

    fn raw(update: bool) -> Value {
        let mut web = json!({"id": "web", "type": "container", "name": "web",
                             "image": format!("registry.test/app:1.2@{OLD}")});
        if update {
            web["update"] = json!("registry");
        }
        json!({"declaration": 1, "resources": [web,
            {"id": "db", "type": "container", "name": "db",
             "image": format!("registry.test/app:1.2@{OLD}")}]})
    }

    fn parse(raw: &Value) -> Declaration {
        crate::declaration::parse(raw.to_string().as_bytes()).expect("valid")
    }

    #[tokio::test]
    async fn a_moved_tag_is_written_for_the_containers_that_follow_it_alone() {
        let fake = FakeRuntime::new();
        fake.set_repo_digests(
            "registry.test/app:1.2",
            &[&format!("registry.test/app@{NEW}")],
        );
        let mut doc = raw(true);
        let decl = parse(&doc);
        let update = follow_tags(&fake, &decl, &mut doc, &BTreeMap::new(), "d.json").await;
        assert_eq!(
            update.moved,
            [Moved {
                id: "web".into(),
                tag: "registry.test/app:1.2".into(),
                from: OLD.into(),
                to: NEW.into()
            }]
        );
        assert_eq!(
            doc["resources"][0]["image"],
            format!("registry.test/app:1.2@{NEW}")
        );
        assert_eq!(
            doc["resources"][1]["image"],
            format!("registry.test/app:1.2@{OLD}")
        );
        assert_eq!(update.exit(), Exit::Ok);
        parse(&doc);

        // Not opted in: nothing asked, nothing moved.
        let mut plain = raw(false);
        let update = follow_tags(&fake, &parse(&plain), &mut plain, &BTreeMap::new(), "d").await;
        assert!(update.moved.is_empty() && update.left.is_empty());
    }

    #[tokio::test]
    async fn a_digest_a_roll_back_refused_is_skipped_until_the_tag_moves_again() {
        let fake = FakeRuntime::new();
        fake.set_repo_digests(
            "registry.test/app:1.2",
            &[&format!("registry.test/app@{NEW}")],
        );
        let refused = BTreeMap::from([(
            "web".to_string(),
            Refused {
                id: "web".into(),
                identity: "x".into(),
                image: format!("registry.test/app:1.2@{NEW}"),
                reason: "not healthy after 90 s".into(),
                at: chrono::Utc::now(),
            },
        )]);
        let mut doc = raw(true);
        let update = follow_tags(&fake, &parse(&doc), &mut doc, &refused, "d").await;
        assert!(update.moved.is_empty());
        assert_eq!(update.left[0].why, "refused");
        assert_eq!(doc, raw(true));
        // An unanswered registry fails the command, changing nothing.
        let fake = FakeRuntime::new();
        let update = follow_tags(&fake, &parse(&doc), &mut doc, &refused, "d").await;
        assert_eq!(update.left[0].why, "unanswered");
        assert_eq!(update.exit(), Exit::Failed);
    }

    #[tokio::test]
    async fn each_tag_is_asked_once_and_a_digest_among_several_is_current() {
        use crate::runtime::fake::Call;
        let fake = FakeRuntime::new();
        let mut doc = raw(true);
        doc["resources"][1]["update"] = json!("registry");
        // Known by the declared digest and another (a list and its
        // instance): nothing moved, for either container.
        fake.set_repo_digests(
            "registry.test/app:1.2",
            &[
                &format!("registry.test/app@{NEW}"),
                &format!("registry.test/app@{OLD}"),
            ],
        );
        let update = follow_tags(&fake, &parse(&doc), &mut doc, &BTreeMap::new(), "d").await;
        assert!(update.moved.is_empty(), "{update:?}");
        assert_eq!(update.left.len(), 2);
        assert!(update.left.iter().all(|l| l.why == "current"), "{update:?}");
        let asked = fake
            .calls()
            .iter()
            .filter(|c| matches!(c, Call::ImagePresent(r) if r == "registry.test/app:1.2"))
            .count();
        assert_eq!(asked, 1);

        // Known by two digests, neither declared: which one to pin cannot
        // be told, and the file is left as it is.
        let third = "sha256:3333333333333333333333333333333333333333333333333333333333333333";
        let fake = FakeRuntime::new();
        fake.set_repo_digests(
            "registry.test/app:1.2",
            &[
                &format!("registry.test/app@{NEW}"),
                &format!("registry.test/app@{third}"),
            ],
        );
        let before = doc.clone();
        let update = follow_tags(&fake, &parse(&doc), &mut doc, &BTreeMap::new(), "d").await;
        assert!(update.moved.is_empty());
        assert!(
            update.left.iter().all(|l| l.why == "unanswered"),
            "{update:?}"
        );
        assert!(update.left[0].detail.contains("2 digests"), "{update:?}");
        assert_eq!(doc, before);
        assert_eq!(update.exit(), Exit::Failed);
    }
}
