//! One apply's builds: each container built once, each file it reads read
//! and hashed once, and resources found by id without a scan.
//!
//! A declaration of a thousand services and five thousand steps each
//! holding two of them built every held service again for each step that
//! holds it (its env-file and mounted file read and hashed each time), and
//! found each held id by walking the whole declaration: ten thousand builds
//! and sixty million comparisons per apply, for what a thousand builds say.
//!
//! What is kept is only as fresh as the files: an apply's decisions tell
//! it of each file the plan writes and directory it makes
//! ([`Builds::plan`]), which forgets what was built, so a container built
//! after that reads the files as the plan will have made them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::reads::FileReads;
use super::{build_with, BuiltContainer, SpecError};
use crate::declaration::{Container, Declaration, Resource, ResourceKind};
use crate::runtime::ContainerSpec;

/// Builds of one declaration's containers; see the module documentation.
pub struct Builds<'d> {
    decl: &'d Declaration,
    index: HashMap<&'d str, &'d Resource>,
    kept: Mutex<Kept>,
    /// What the plan will have made by then (see [`Builds::plan`]).
    pending: Mutex<super::Planned>,
}

#[derive(Debug, Default)]
struct Kept {
    built: HashMap<String, Result<Arc<BuiltContainer>, SpecError>>,
    specs: HashMap<String, Arc<ContainerSpec>>,
    files: FileReads,
}

impl std::fmt::Debug for Builds<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Builds")
            .field("resources", &self.index.len())
            .finish_non_exhaustive()
    }
}

impl<'d> Builds<'d> {
    /// Nothing built yet; `decl`'s resources indexed by id.
    pub fn new(decl: &'d Declaration) -> Self {
        Builds {
            decl,
            index: decl.resources.iter().map(|r| (r.id.as_str(), r)).collect(),
            kept: Mutex::new(Kept::default()),
            pending: Mutex::new(super::Planned::new()),
        }
    }

    /// Forget everything built, freeing it off the caller's path
    /// ([`crate::task::drop_later`]): thousands of specs and file reads.
    pub fn release(&self) {
        let kept = std::mem::take(&mut *self.kept.lock().unwrap_or_else(|e| e.into_inner()));
        crate::task::drop_later(kept);
    }

    /// The declaration built from.
    pub fn declaration(&self) -> &'d Declaration {
        self.decl
    }

    /// The resource with this id.
    pub fn resource(&self, id: &str) -> Option<&'d Resource> {
        self.index.get(id).copied()
    }

    /// The container with this id, with its resource.
    pub fn container(&self, id: &str) -> Option<(&'d Resource, &'d Container)> {
        let res = self.resource(id)?;
        match &res.kind {
            ResourceKind::Container(c) => Some((res, c)),
            _ => None,
        }
    }

    fn kept(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Container `c` (resource `res` of the declaration), built once.
    pub fn build(&self, res: &Resource, c: &Container) -> Result<Arc<BuiltContainer>, SpecError> {
        let mut kept = self.kept();
        if let Some(built) = kept.built.get(res.id.as_str()) {
            return built.clone();
        }
        let pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let built = build_with(self.decl, res, c, &mut kept.files, &pending).map(Arc::new);
        drop(pending);
        kept.built.insert(res.id.to_string(), built.clone());
        built
    }

    /// Container `c` built for one use, not kept: a scheduled step's, which
    /// nothing else is built from (a step that another holds is built
    /// again, and kept, by [`Builds::spec`]). Thousands of steps' builds
    /// are then never all alive at once. Its files are read through the
    /// apply's reads as any other's.
    pub fn build_once(&self, res: &Resource, c: &Container) -> Result<BuiltContainer, SpecError> {
        let mut kept = self.kept();
        if let Some(built) = kept.built.get(res.id.as_str()) {
            return built.as_deref().cloned().map_err(Clone::clone);
        }
        let pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        build_with(self.decl, res, c, &mut kept.files, &pending)
    }

    /// The spec of container `id`, shared by every step that holds it;
    /// `None` when there is no such container or it cannot be built.
    pub fn spec(&self, id: &str) -> Option<Arc<ContainerSpec>> {
        if let Some(spec) = self.kept().specs.get(id) {
            return Some(spec.clone());
        }
        let (res, c) = self.container(id)?;
        let spec = self.build(res, c).ok()?.spec.clone();
        self.kept().specs.insert(id.to_string(), spec.clone());
        Some(spec)
    }

    /// What the plan makes from here on (a file it writes, a directory it
    /// makes, a group it sets): builds from here on read the machine as
    /// the plan will have made it, and every build is forgotten.
    pub fn plan(&self, change: impl FnOnce(&mut super::Planned)) {
        change(&mut self.pending.lock().unwrap_or_else(|e| e.into_inner()));
        self.invalidate();
    }

    /// Forget every build and file read: what the apply did since may
    /// have changed what a container reads.
    pub fn invalidate(&self) {
        *self.kept() = Kept::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::Path;

    fn decl(env: &Path) -> Declaration {
        let image = format!("registry.test/app@sha256:{}", "ab".repeat(32));
        let doc = json!({"declaration": 1, "resources": [
            {"id": "web", "type": "container", "name": "web", "image": image,
             "env-files": [env.display().to_string()]},
            {"id": "gc", "type": "container", "name": "gc", "image": image,
             "schedule": "0 3 * * *", "while-stopped": ["web"]}
        ]});
        crate::declaration::parse(doc.to_string().as_bytes()).expect("valid")
    }

    #[test]
    fn a_file_is_read_once_until_invalidated() {
        let dir = crate::test_dirs::test_dir();
        let env = dir.path().join("web.env");
        std::fs::write(&env, b"A=1\n").expect("write");
        let d = decl(&env);
        let builds = Builds::new(&d);
        let (res, c) = builds.container("web").expect("web");
        let first = builds.build(res, c).expect("built");
        // Read once: a change meanwhile is not seen by the same apply...
        std::fs::write(&env, b"A=2\n").expect("write");
        assert_eq!(
            builds.build(res, c).expect("built").identity,
            first.identity
        );
        assert_eq!(
            builds.spec("web").expect("spec").env,
            vec![("A".to_string(), "1".to_string())]
        );
        // ...until what the apply did may have changed it.
        builds.invalidate();
        let again = builds.build(res, c).expect("built");
        assert_ne!(again.identity, first.identity);
        assert_eq!(
            again.identity,
            super::super::build(&d, res, c).expect("built").identity
        );
        // A step's build is made for its one use and not kept; it reads
        // its files through the same reads.
        let (gc_res, gc) = builds.container("gc").expect("gc");
        let once = builds.build_once(gc_res, gc).expect("built");
        assert_eq!(
            once.identity,
            super::super::build(&d, gc_res, gc).expect("built").identity
        );
        assert!(!builds.kept().built.contains_key("gc"), "not kept");
        assert!(builds.container("gc").is_some());
        assert!(builds.container("nope").is_none());
        assert!(builds.spec("nope").is_none());
    }
}
