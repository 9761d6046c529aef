//! A service's `extends`: the service it names (in the same file, or in
//! `file:` read relative to the extending file) taken as its base, and
//! the extending service merged over it by compose's merge rules
//! ([`super::merge`]), before the file is merged with the others, as
//! compose resolves it file by file. The base's own `extends` is resolved
//! first; a cycle is refused naming each service of it, a chain longer
//! than [`MAX_DEPTH`] refused. `depends_on` and `volumes_from` are never
//! inherited (compose documents them local to each service). A base read
//! from another directory has its relative paths (bind sources, env
//! files) made absolute from that directory, as compose reads them.
//! Other files are read through the bounded reader ([`super::input`]),
//! each once, and interpolated as the project's own.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::input::Budget;
use super::interpolate::Interpolator;
use super::merge;
use super::yaml::{self, Mark};

/// The longest chain of `extends` followed (compose sets none; a chain
/// this long is a mistake, and each link may read a file).
pub const MAX_DEPTH: usize = 16;

/// The keys a base never passes on.
const LOCAL: [&str; 2] = ["depends_on", "volumes_from"];

/// A file's services (interpolated, `extends` not yet resolved) and its
/// `!reset`/`!override` marks.
struct Services {
    map: Map<String, Value>,
    marks: Vec<Mark>,
}

/// Resolves `extends` in the files of one project.
pub struct Extends<'i, 'a> {
    interpolator: &'i mut Interpolator<'a>,
    budget: &'i mut Budget,
    /// Files read for `extends: {file: ...}`, each once (`None`: unread).
    files: HashMap<PathBuf, Option<Services>>,
    pub problems: Vec<String>,
    pub notes: Vec<String>,
}

/// One link of a chain: the file and the service.
type Link = (PathBuf, String);

impl<'i, 'a> Extends<'i, 'a> {
    pub fn new(interpolator: &'i mut Interpolator<'a>, budget: &'i mut Budget) -> Self {
        Extends {
            interpolator,
            budget,
            files: HashMap::new(),
            problems: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Resolve each service's `extends` in `doc`, the document of `file`
    /// with `marks`; a service that cannot be resolved keeps no `extends`
    /// and the problem is listed.
    pub fn resolve(&mut self, file: &Path, doc: &mut Value, marks: &[Mark]) {
        let Some(Value::Object(services)) = doc.get("services") else {
            return;
        };
        if !services.values().any(|s| s.get("extends").is_some()) {
            return;
        }
        let here = Services {
            map: services.clone(),
            marks: marks.to_vec(),
        };
        let names: Vec<String> = here
            .map
            .iter()
            .filter(|(_, s)| s.get("extends").is_some())
            .map(|(n, _)| n.clone())
            .collect();
        let mut out = Vec::new();
        for name in names {
            let mut chain = Vec::new();
            match self.service(file, &here, &name, &mut chain) {
                Ok(service) => out.push((name, Value::Object(service))),
                Err(e) => {
                    self.problems.push(format!("{}: {e}", file.display()));
                    let mut left = here.map[&name].clone();
                    if let Value::Object(m) = &mut left {
                        m.remove("extends");
                    }
                    out.push((name, left));
                }
            }
        }
        if let Some(Value::Object(services)) = doc.get_mut("services") {
            for (name, service) in out {
                services.insert(name, service);
            }
        }
    }

    /// Service `name` of `file` (whose services are `of`), its `extends`
    /// resolved.
    fn service(
        &mut self,
        file: &Path,
        of: &Services,
        name: &str,
        chain: &mut Vec<Link>,
    ) -> Result<Map<String, Value>, String> {
        let link = (file.to_path_buf(), name.to_owned());
        if chain.contains(&link) {
            let shown: Vec<String> = chain
                .iter()
                .chain(std::iter::once(&link))
                .map(|(f, n)| format!("{n} ({})", f.display()))
                .collect();
            return Err(format!(
                "extends: a cycle: {}: break it",
                shown.join(" extends ")
            ));
        }
        if chain.len() >= MAX_DEPTH {
            return Err(format!(
                "services.{}.extends: more than {MAX_DEPTH} services extended one from another: write the base out",
                chain[0].1
            ));
        }
        let Some(Value::Object(service)) = of.map.get(name) else {
            return Err(match chain.last() {
                Some((_, by)) => format!(
                    "services.{by}.extends: no service {name:?} in {}",
                    file.display()
                ),
                None => format!("services.{name}: not a mapping"),
            });
        };
        let mut service = service.clone();
        let Some(ext) = service.remove("extends") else {
            return Ok(service);
        };
        let (base_name, base_file) = match &ext {
            Value::String(s) => (s.clone(), None),
            Value::Object(m) => match m.get("service") {
                Some(Value::String(s)) => (s.clone(), m.get("file").map(super::values::text)),
                _ => {
                    return Err(format!(
                        "services.{name}.extends.service: missing: name the service to extend"
                    ))
                }
            },
            _ => {
                return Err(format!(
                    "services.{name}.extends: a service name, or {{service: NAME, file: FILE}}"
                ))
            }
        };
        chain.push(link);
        let base = match base_file {
            None => self.service(file, of, &base_name, chain),
            Some(other) => {
                let dir = file.parent().unwrap_or(Path::new("/"));
                let path = clean(&dir.join(&other));
                self.in_file(&path, &base_name, chain).map(|mut base| {
                    let from = path.parent().unwrap_or(Path::new("/"));
                    if from != dir {
                        rebase(&mut base, from);
                    }
                    base
                })
            }
        };
        chain.pop();
        let mut base = base?;
        for key in LOCAL {
            if base.remove(key).is_some() {
                self.notes.push(format!(
                    "services.{name}: {key} of {base_name} is not inherited through extends (as compose documents); give it on {name} if it needs it"
                ));
            }
        }
        // The extending service's `!reset` and `!override` take the
        // base's values out, as they do those of an earlier file.
        let mut wrapped = serde_json::json!({"services": {name: Value::Object(base)}});
        merge::unset_marked(&mut wrapped, &of.marks);
        let base = match wrapped["services"][name].take() {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        Ok(merge::merge_service(base, service))
    }

    /// Service `name` of the file at `path`, read once and kept.
    fn in_file(
        &mut self,
        path: &Path,
        name: &str,
        chain: &mut Vec<Link>,
    ) -> Result<Map<String, Value>, String> {
        if !self.files.contains_key(path) {
            let read = self.read(path);
            self.files.insert(path.to_path_buf(), read);
        }
        // Taken out while it is used, so that `self` may read others.
        let Some(Some(of)) = self.files.remove(path) else {
            self.files.insert(path.to_path_buf(), None);
            return Err(format!("extends: {} could not be read", path.display()));
        };
        let got = self.service(path, &of, name, chain);
        self.files.insert(path.to_path_buf(), Some(of));
        got
    }

    fn read(&mut self, path: &Path) -> Option<Services> {
        let shown = path.display().to_string();
        let text = match super::input::read_text(path, self.budget) {
            Ok(t) => t,
            Err(e) => {
                self.problems
                    .push(format!("extends: {shown} {}", e.reason()));
                return None;
            }
        };
        let mut docs = match yaml::documents(&text) {
            Ok(d) => d,
            Err(e) => {
                self.problems.push(format!("extends: {shown}: {e}"));
                return None;
            }
        };
        if docs.is_empty() {
            self.problems
                .push(format!("extends: {shown}: an empty file"));
            return None;
        }
        let yaml::Document { mut value, marks } = docs.remove(0);
        self.interpolator.tree(&mut value, "");
        self.problems.extend(
            std::mem::take(&mut self.interpolator.problems)
                .into_iter()
                .map(|p| format!("{shown}: {p}")),
        );
        let map = match value.get_mut("services").map(Value::take) {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        Some(Services { map, marks })
    }
}

/// `path` with `.` and `..` resolved in the text.
fn clean(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// A relative path as compose writes one in a bind source or env file.
fn relative(text: &str) -> bool {
    text == "." || text == ".." || text.starts_with("./") || text.starts_with("../")
}

/// The relative paths of a base read from `dir`, made absolute there.
fn rebase(service: &mut Map<String, Value>, dir: &Path) {
    let abs = |t: &str| clean(&dir.join(t)).display().to_string();
    if let Some(Value::Array(volumes)) = service.get_mut("volumes") {
        for v in volumes {
            match v {
                Value::String(s) => {
                    if let Some((src, rest)) = s.split_once(':') {
                        if relative(src) {
                            *s = format!("{}:{rest}", abs(src));
                        }
                    }
                }
                Value::Object(m) => {
                    if let Some(Value::String(src)) = m.get_mut("source") {
                        if relative(src) {
                            *src = abs(src);
                        }
                    }
                }
                _ => {}
            }
        }
    }
    let env_file = |v: &mut Value| match v {
        Value::String(s) if !Path::new(s.as_str()).is_absolute() => *s = abs(s),
        Value::Object(m) => {
            if let Some(Value::String(s)) = m.get_mut("path") {
                if !Path::new(s.as_str()).is_absolute() {
                    *s = abs(s);
                }
            }
        }
        _ => {}
    };
    match service.get_mut("env_file") {
        Some(Value::Array(items)) => items.iter_mut().for_each(env_file),
        Some(v) => env_file(v),
        None => {}
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        /// Whatever the graph of `extends` in one file, each service ends
        /// resolved (no `extends` left) or refused: a cycle by name, a
        /// chain past the bound by its length, as following it says.
        #[test]
        fn any_graph_of_extends_resolves_or_is_refused_by_what_it_is(
            links in proptest::collection::vec(proptest::option::of(0usize..24), 1..24)
        ) {
            let n = links.len();
            let mut services = Map::new();
            for (i, to) in links.iter().enumerate() {
                let mut s = json!({"environment": {format!("V{i}"): "x"}});
                if let Some(to) = to {
                    s["extends"] = json!(format!("s{}", to % n));
                }
                services.insert(format!("s{i}"), s);
            }
            let mut doc = json!({"services": services});
            let lookup = |_: &str| None;
            let mut interpolator = Interpolator::new(&lookup);
            let mut budget = Budget::default();
            let mut ext = Extends::new(&mut interpolator, &mut budget);
            ext.resolve(Path::new("/p/compose.yaml"), &mut doc, &[]);
            for (i, _) in links.iter().enumerate() {
                let name = format!("s{i}");
                prop_assert!(doc["services"][&name].get("extends").is_none());
                // Follow the chain: a cycle, too long, or a base reached.
                let mut seen = vec![i];
                let mut at = i;
                let outcome = loop {
                    match links[at] {
                        None => break "resolved",
                        Some(to) => {
                            let to = to % n;
                            if seen.contains(&to) {
                                break "cycle";
                            }
                            if seen.len() > MAX_DEPTH {
                                break "long";
                            }
                            seen.push(to);
                            at = to;
                        }
                    }
                };
                if outcome == "resolved" && seen.len() <= MAX_DEPTH {
                    // Every variable of the chain, merged.
                    let env = doc["services"][&name]["environment"].as_object().unwrap();
                    for s in &seen {
                        let var = format!("V{s}");
                        prop_assert!(env.contains_key(&var), "{}: {:?}", name, env);
                    }
                }
            }
            let cycles = ext.problems.iter().filter(|p| p.contains("a cycle")).count();
            let any_cycle = (0..n).any(|i| {
                let mut seen = vec![i];
                let mut at = i;
                while let Some(to) = links[at] {
                    let to = to % n;
                    if seen.contains(&to) {
                        return true;
                    }
                    seen.push(to);
                    at = to;
                }
                false
            });
            prop_assert_eq!(cycles > 0, any_cycle, "{:?}", ext.problems);
        }
    }

    #[test]
    fn a_base_from_another_directory_has_its_relative_paths_made_absolute_there() {
        let Value::Object(mut service) = json!({
            "volumes": ["./data:/data", "../up:/up:ro", "named:/n", "/abs:/abs",
                        {"type": "bind", "source": "./long", "target": "/l"}],
            "env_file": ["app.env", {"path": "./b.env", "required": false}, "/etc/c.env"],
        }) else {
            unreachable!()
        };
        rebase(&mut service, Path::new("/srv/common"));
        assert_eq!(
            service["volumes"],
            json!(["/srv/common/data:/data", "/srv/up:/up:ro", "named:/n", "/abs:/abs",
                   {"type": "bind", "source": "/srv/common/long", "target": "/l"}])
        );
        assert_eq!(
            service["env_file"],
            json!(["/srv/common/app.env", {"path": "/srv/common/b.env", "required": false}, "/etc/c.env"])
        );
        let Value::Object(mut one) = json!({"env_file": "x.env"}) else {
            unreachable!()
        };
        rebase(&mut one, Path::new("/srv"));
        assert_eq!(one["env_file"], "/srv/x.env");
    }
}
