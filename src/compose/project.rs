//! A compose project read as `docker compose` reads it: its files (the
//! default names, or each `-f` merged in order), its environment (the
//! project directory's `.env`, or `--env-file`, under the process
//! environment), interpolation, YAML anchors and merge keys, and its name.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use std::cell::RefCell;

use serde_json::{Map, Value};

use super::input::{self, Budget};
use super::interpolate::Interpolator;
use super::{dotenv, yaml};

/// The file names compose looks for, in its order, when no `-f` is given.
pub const DEFAULT_FILES: [&str; 4] = [
    "compose.yaml",
    "compose.yml",
    "docker-compose.yaml",
    "docker-compose.yml",
];

/// The override file compose merges over each default name.
fn override_of(name: &str) -> String {
    let (stem, ext) = name.rsplit_once('.').unwrap_or((name, "yml"));
    format!("{stem}.override.{ext}")
}

/// What `mesh-host import` was asked to read.
#[derive(Debug, Clone, Default)]
pub struct Source {
    /// `-f`, in order; empty: the default names in `dir`.
    pub files: Vec<PathBuf>,
    /// `--project-name`.
    pub project_name: Option<String>,
    /// `--env-file`, in order; empty: the project directory's `.env`.
    pub env_files: Vec<PathBuf>,
    /// `--profile`.
    pub profiles: Vec<String>,
    /// Where the default names are looked for (the working directory).
    pub dir: PathBuf,
    /// The process environment.
    pub environment: BTreeMap<String, String>,
}

/// A project, merged and interpolated.
#[derive(Debug)]
pub struct Project {
    pub name: String,
    /// The directory relative paths are read from (the first file's).
    pub dir: PathBuf,
    /// The merged model, as JSON.
    pub model: Map<String, Value>,
    /// The variables it was interpolated with.
    pub variables: BTreeMap<String, String>,
    pub profiles: Vec<String>,
    /// What is left of the bytes this import may read (env files are
    /// read while the services are).
    pub budget: RefCell<Budget>,
}

/// The files to read: the `-f` ones, or the first default name found in
/// `dir` and its override file.
fn files(source: &Source) -> Result<Vec<PathBuf>, String> {
    if !source.files.is_empty() {
        return Ok(source
            .files
            .iter()
            .map(|f| {
                if f.is_absolute() {
                    f.clone()
                } else {
                    source.dir.join(f)
                }
            })
            .collect());
    }
    for name in DEFAULT_FILES {
        let path = source.dir.join(name);
        if input::exists(&path) {
            let mut found = vec![path];
            let over = source.dir.join(override_of(name));
            if input::exists(&over) {
                found.push(over);
            }
            return Ok(found);
        }
    }
    Err(format!(
        "no compose file in {}: looked for {} (give one with -f)",
        source.dir.display(),
        DEFAULT_FILES.join(", ")
    ))
}

/// Read the env file at `path` as compose reads it (see `dotenv.rs`),
/// its values interpolated from `environment` first, then from the
/// values before them; variables used unset are added to `unset`.
pub fn read_env_file(
    path: &Path,
    environment: &dyn Fn(&str) -> Option<String>,
    budget: &mut Budget,
    unset: &mut Vec<usize>,
) -> Result<Vec<(String, String)>, String> {
    let shown = path.display().to_string();
    let text = input::read_text(path, budget).map_err(|e| format!("{shown} {}", e.reason()))?;
    let mut expand = dotenv::expander(environment, &shown, unset);
    dotenv::read(&text, &mut expand, environment).map_err(|e| format!("{shown}: {e}"))
}

/// One compose file read: its documents, or why not.
fn read_file(path: &Path, budget: &mut Budget) -> Result<Vec<yaml::Document>, String> {
    let shown = path.display();
    let text = input::read_text(path, budget).map_err(|e| format!("{shown} {}", e.reason()))?;
    yaml::documents(&text).map_err(|e| format!("{shown}: {e}"))
}

/// A project read, with what was noted on the way.
#[derive(Debug)]
pub struct Loaded {
    pub project: Project,
    /// Problems only some values suffer (a required variable unset), so
    /// that the rest of the project is still read for problems.
    pub refused: Vec<String>,
    /// What compose would warn of (a variable used unset).
    pub notes: Vec<String>,
}

/// Read the project; every problem listed. What leaves the project
/// unreadable (a file missing or not YAML) is an error.
pub fn load(source: &Source) -> Result<Loaded, Vec<String>> {
    let files = files(source).map_err(|e| vec![e])?;
    let dir = files[0]
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| source.dir.clone());
    let mut budget = Budget::default();
    let mut problems = Vec::new();
    let mut notes = Vec::new();

    let env_files: Vec<PathBuf> = if source.env_files.is_empty() {
        let default = dir.join(".env");
        if input::exists(&default) {
            vec![default]
        } else {
            Vec::new()
        }
    } else {
        source.env_files.clone()
    };
    // The process environment wins over the env files, as in compose; an
    // env file's values are looked up there first, then among the values
    // of the env files before.
    let mut from_files: BTreeMap<String, String> = BTreeMap::new();
    for path in &env_files {
        let environment = |name: &str| {
            source
                .environment
                .get(name)
                .or_else(|| from_files.get(name))
                .cloned()
        };
        let mut unset = Vec::new();
        match read_env_file(path, &environment, &mut budget, &mut unset) {
            Ok(pairs) => from_files.extend(pairs),
            Err(e) => problems.push(e),
        }
        // Lines, not names: an env file may be anything (a secret
        // linked by mistake), and none of its text is printed.
        for line in unset {
            notes.push(format!(
                "{}: line {line} uses a variable that is not set: an empty string is used, as compose uses it",
                path.display()
            ));
        }
    }
    let mut variables = from_files;
    variables.extend(source.environment.clone());
    let lookup = |name: &str| variables.get(name).cloned();
    let mut interpolator = Interpolator::new(&lookup);
    let mut value_problems = Vec::new();

    let mut merged: Option<Value> = None;
    for path in &files {
        let shown = path.display().to_string();
        let documents = match read_file(path, &mut budget) {
            Ok(d) => d,
            Err(e) => {
                problems.push(e);
                continue;
            }
        };
        for yaml::Document { mut value, marks } in documents {
            if !value.is_object() {
                problems.push(format!(
                    "{shown}: a compose file is a mapping (services: ...)"
                ));
                continue;
            }
            interpolator.tree(&mut value, "");
            value_problems.extend(
                std::mem::take(&mut interpolator.problems)
                    .into_iter()
                    .map(|p| format!("{shown}: {p}")),
            );
            let mut extends = super::extends::Extends::new(&mut interpolator, &mut budget);
            extends.resolve(path, &mut value, &marks);
            value_problems.extend(std::mem::take(&mut extends.problems));
            notes.extend(std::mem::take(&mut extends.notes));
            merged = Some(match merged {
                None => value,
                Some(mut base) => {
                    super::merge::unset_marked(&mut base, &marks);
                    super::merge::merge(base, value)
                }
            });
        }
    }
    notes.extend(interpolator.unset_notes());
    drop(interpolator);
    let model = match merged {
        Some(Value::Object(map)) => map,
        _ => {
            if problems.is_empty() {
                problems.push("the project is empty: its files declare nothing".into());
            }
            Map::new()
        }
    };
    let name = project_name(source, &model, &variables, &dir);
    let name = match name {
        Ok(n) => n,
        Err(e) => {
            problems.push(e);
            String::new()
        }
    };
    if !problems.is_empty() {
        return Err(problems);
    }
    let mut profiles = source.profiles.clone();
    if profiles.is_empty() {
        if let Some(p) = variables.get("COMPOSE_PROFILES") {
            profiles = p
                .split(',')
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty())
                .collect();
        }
    }
    Ok(Loaded {
        project: Project {
            name,
            dir,
            model,
            variables,
            profiles,
            budget: RefCell::new(budget),
        },
        refused: value_problems,
        notes,
    })
}

/// `--project-name`, `COMPOSE_PROJECT_NAME`, the top-level `name:`, or the
/// project directory's name, as compose normalizes it (lower case; only
/// letters, digits, `-` and `_`).
fn project_name(
    source: &Source,
    model: &Map<String, Value>,
    variables: &BTreeMap<String, String>,
    dir: &Path,
) -> Result<String, String> {
    let (given, normalize) = if let Some(n) = &source.project_name {
        (n.clone(), false)
    } else if let Some(n) = variables
        .get("COMPOSE_PROJECT_NAME")
        .filter(|n| !n.is_empty())
    {
        (n.clone(), false)
    } else if let Some(n) = model.get("name").and_then(Value::as_str) {
        (n.to_owned(), false)
    } else {
        let base = dir
            .canonicalize()
            .ok()
            .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_default();
        (base, true)
    };
    let name = if normalize {
        given
            .to_lowercase()
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
            .collect::<String>()
    } else {
        given.clone()
    };
    let ok = !name.is_empty()
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_'));
    if !ok {
        return Err(format!(
            "project name {given:?}: lower-case letters, digits, '-' and '_', starting with a letter or digit (give one with --project-name)"
        ));
    }
    Ok(name)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn override_files_are_named_as_compose_names_them() {
        assert_eq!(override_of("compose.yaml"), "compose.override.yaml");
        assert_eq!(
            override_of("docker-compose.yml"),
            "docker-compose.override.yml"
        );
    }
}
