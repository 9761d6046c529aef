//! A compose project read as `docker compose` reads it: its files (the
//! default names, or each `-f` merged in order), its environment (the
//! project directory's `.env`, or `--env-file`, under the process
//! environment), interpolation, YAML anchors and merge keys, and its name.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::interpolate::interpolate_tree;

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
#[derive(Debug, Clone)]
pub struct Project {
    pub name: String,
    /// The directory relative paths are read from (the first file's).
    pub dir: PathBuf,
    /// The merged model, as JSON.
    pub model: Map<String, Value>,
    /// The variables it was interpolated with.
    pub variables: BTreeMap<String, String>,
    pub profiles: Vec<String>,
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
        if path.is_file() {
            let mut found = vec![path];
            let over = source.dir.join(override_of(name));
            if over.is_file() {
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

/// A `.env` file: `KEY=VALUE` lines (`export` allowed), `#` comments,
/// values in single quotes taken as written, in double quotes with `\n`,
/// `\"` and `\\` read, unquoted ones trimmed and cut at ` #`.
pub fn read_dotenv(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line).trim_start();
        let Some((key, raw)) = line.split_once('=') else {
            return Err(format!("line {}: {line:?} is not KEY=VALUE", n + 1));
        };
        let key = key.trim();
        if key.is_empty()
            || !key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
        {
            return Err(format!("line {}: {key:?} is not a variable name", n + 1));
        }
        let raw = raw.trim();
        let value = if let Some(inner) = raw.strip_prefix('\'') {
            inner
                .split_once('\'')
                .map(|(v, _)| v.to_owned())
                .ok_or_else(|| format!("line {}: a quote left open", n + 1))?
        } else if let Some(inner) = raw.strip_prefix('"') {
            let mut value = String::new();
            let mut chars = inner.chars();
            let mut closed = false;
            while let Some(c) = chars.next() {
                match c {
                    '"' => {
                        closed = true;
                        break;
                    }
                    '\\' => match chars.next() {
                        Some('n') => value.push('\n'),
                        Some('t') => value.push('\t'),
                        Some(other) => value.push(other),
                        None => {}
                    },
                    c => value.push(c),
                }
            }
            if !closed {
                return Err(format!("line {}: a quote left open", n + 1));
            }
            value
        } else {
            match raw.find(" #") {
                Some(i) => raw[..i].trim_end().to_owned(),
                None => raw.to_owned(),
            }
        };
        out.push((key.to_owned(), value));
    }
    Ok(out)
}

/// A YAML value as JSON (keys as strings, tags dropped); `at` names it.
fn to_json(value: serde_yaml_ng::Value, at: &str, problems: &mut Vec<String>) -> Value {
    use serde_yaml_ng::Value as Y;
    match value {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(b),
        Y::Number(n) => serde_json::to_value(&n).unwrap_or(Value::Null),
        Y::String(s) => Value::String(s),
        Y::Sequence(items) => Value::Array(
            items
                .into_iter()
                .enumerate()
                .map(|(i, v)| to_json(v, &format!("{at}[{i}]"), problems))
                .collect(),
        ),
        Y::Mapping(map) => {
            let mut out = Map::new();
            for (k, v) in map {
                let key = match k {
                    Y::String(s) => s,
                    Y::Number(n) => n.to_string(),
                    Y::Bool(b) => b.to_string(),
                    other => {
                        problems.push(format!("{at}: a key must be a string, found {other:?}"));
                        continue;
                    }
                };
                let path = if at.is_empty() {
                    key.clone()
                } else {
                    format!("{at}.{key}")
                };
                let v = to_json(v, &path, problems);
                out.insert(key, v);
            }
            Value::Object(out)
        }
        Y::Tagged(tagged) => to_json(tagged.value, at, problems),
    }
}

/// Read the project; every problem listed. What leaves the project
/// unreadable (a file missing or not YAML) is an error; what only some
/// values suffer (a variable unset) comes with the project, so that the
/// rest of it is still read for problems.
pub fn load(source: &Source) -> Result<(Project, Vec<String>), Vec<String>> {
    let files = files(source).map_err(|e| vec![e])?;
    let dir = files[0]
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| source.dir.clone());
    let mut problems = Vec::new();
    let mut value_problems = Vec::new();

    let mut variables: BTreeMap<String, String> = BTreeMap::new();
    let env_files: Vec<PathBuf> = if source.env_files.is_empty() {
        let default = dir.join(".env");
        if default.is_file() {
            vec![default]
        } else {
            Vec::new()
        }
    } else {
        source.env_files.clone()
    };
    for path in &env_files {
        match std::fs::read_to_string(path) {
            Ok(text) => match read_dotenv(&text) {
                Ok(pairs) => variables.extend(pairs),
                Err(e) => problems.push(format!("{}: {e}", path.display())),
            },
            Err(e) => problems.push(format!("{}: cannot be read: {e}", path.display())),
        }
    }
    // The process environment wins over the env files, as in compose.
    variables.extend(source.environment.clone());
    let lookup = |name: &str| variables.get(name).cloned();

    let mut merged: Option<Value> = None;
    for path in &files {
        let shown = path.display().to_string();
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) => {
                problems.push(format!("{shown}: cannot be read: {e}"));
                continue;
            }
        };
        let mut yaml: serde_yaml_ng::Value = match serde_yaml_ng::from_str(&text) {
            Ok(v) => v,
            Err(e) => {
                problems.push(format!("{shown}: not valid YAML: {e}"));
                continue;
            }
        };
        if let Err(e) = yaml.apply_merge() {
            problems.push(format!("{shown}: a merge key (<<) cannot be applied: {e}"));
            continue;
        }
        let mut file_problems = Vec::new();
        let mut value = to_json(yaml, "", &mut file_problems);
        if !value.is_object() {
            file_problems.push("a compose file is a mapping (services: ...)".to_owned());
        }
        problems.extend(file_problems.into_iter().map(|p| format!("{shown}: {p}")));
        let mut unset = Vec::new();
        interpolate_tree(&mut value, &lookup, "", &mut unset);
        value_problems.extend(unset.into_iter().map(|p| format!("{shown}: {p}")));
        merged = Some(match merged {
            None => value,
            Some(base) => super::merge::merge(base, value),
        });
    }
    let model = match merged {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
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
    Ok((
        Project {
            name,
            dir,
            model,
            variables,
            profiles,
        },
        value_problems,
    ))
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
    fn a_dotenv_file_reads_as_compose_reads_it() {
        let pairs = read_dotenv(
            "# comment\nA=1\nexport B = two words # note\nC='lit ${X} #'\nD=\"line\\nnext \\\"q\\\"\"\n\nE=\n",
        )
        .unwrap();
        assert_eq!(
            pairs,
            [
                ("A".to_string(), "1".to_string()),
                ("B".into(), "two words".into()),
                ("C".into(), "lit ${X} #".into()),
                ("D".into(), "line\nnext \"q\"".into()),
                ("E".into(), String::new()),
            ]
        );
        assert!(read_dotenv("JUSTAWORD").unwrap_err().contains("line 1"));
        assert!(read_dotenv("A='open").unwrap_err().contains("left open"));
    }

    #[test]
    fn override_files_are_named_as_compose_names_them() {
        assert_eq!(override_of("compose.yaml"), "compose.override.yaml");
        assert_eq!(
            override_of("docker-compose.yml"),
            "docker-compose.override.yml"
        );
    }
}
