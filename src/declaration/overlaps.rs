//! Which paths of a set overlap a path (one is the other or holds it, by
//! whole components: [`AbsPath::overlaps`]), found in time proportional
//! to the path's depth rather than to the size of the set: shared folders
//! that must not nest, and the lint of a step's window that must hold the
//! writers of what it reads, stay linear in the declaration.

use std::collections::HashMap;

use super::types::AbsPath;

/// Paths, each with the values given with it, in the order given.
#[derive(Debug)]
pub struct PathIndex<T> {
    /// Each path given, with its values.
    at: HashMap<String, Vec<T>>,
    /// Each proper ancestor of a path given, with the values of the paths
    /// under it.
    under: HashMap<String, Vec<T>>,
}

impl<T> Default for PathIndex<T> {
    fn default() -> Self {
        PathIndex {
            at: HashMap::new(),
            under: HashMap::new(),
        }
    }
}

/// `path` and each directory holding it, up to `/`: `/a/b`, `/a`, `/`.
pub fn self_and_ancestors(path: &str) -> impl Iterator<Item = &str> {
    let cuts = path
        .char_indices()
        .filter(|&(i, c)| c == '/' && i > 0)
        .map(|(i, _)| &path[..i]);
    let root = (path != "/").then_some("/");
    std::iter::once(path)
        .chain(cuts.collect::<Vec<_>>().into_iter().rev())
        .chain(root)
}

impl<T: Copy> PathIndex<T> {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// Give `path` with `value`.
    pub fn insert(&mut self, path: &AbsPath, value: T) {
        let mut all = self_and_ancestors(path.as_str());
        if let Some(own) = all.next() {
            self.at.entry(own.to_owned()).or_default().push(value);
        }
        for ancestor in all {
            self.under
                .entry(ancestor.to_owned())
                .or_default()
                .push(value);
        }
    }

    /// The values of every path that overlaps `path`: those at it or
    /// holding it, then those under it. A value given with several paths
    /// may come more than once.
    pub fn overlapping<'s>(&'s self, path: &'s AbsPath) -> impl Iterator<Item = T> + 's {
        self_and_ancestors(path.as_str())
            .filter_map(|p| self.at.get(p))
            .chain(self.under.get(path.as_str()))
            .flat_map(|values| values.iter().copied())
    }

    /// The first value given (by `Ord`, for values that are indices in the
    /// order given) of a path that overlaps `path`: each list is looked at
    /// only for its first.
    pub fn first_overlapping(&self, path: &AbsPath) -> Option<T>
    where
        T: Ord,
    {
        self_and_ancestors(path.as_str())
            .filter_map(|p| self.at.get(p))
            .chain(self.under.get(path.as_str()))
            .filter_map(|values| values.first().copied())
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> AbsPath {
        AbsPath::try_from(s).expect("path")
    }

    #[test]
    fn ancestors_by_whole_components() {
        assert_eq!(
            self_and_ancestors("/a/bc/d").collect::<Vec<_>>(),
            ["/a/bc/d", "/a/bc", "/a", "/"]
        );
        assert_eq!(self_and_ancestors("/").collect::<Vec<_>>(), ["/"]);
    }

    /// The index answers as a search of every path given would.
    #[test]
    fn finds_what_a_search_of_every_path_finds() {
        let paths = [
            "/",
            "/srv",
            "/srv/a",
            "/srv/ab",
            "/srv/a/b",
            "/srv/a/b/c",
            "/etc",
            "/etc/x",
            "/srvx",
        ];
        let mut index = PathIndex::new();
        let mut given: Vec<(AbsPath, usize)> = Vec::new();
        for (i, path) in paths.iter().enumerate().skip(1) {
            index.insert(&p(path), i);
            given.push((p(path), i));
            for query in paths {
                let q = p(query);
                let mut searched: Vec<usize> = given
                    .iter()
                    .filter(|(g, _)| g.overlaps(&q))
                    .map(|(_, v)| *v)
                    .collect();
                let mut found: Vec<usize> = index.overlapping(&q).collect();
                searched.sort_unstable();
                found.sort_unstable();
                found.dedup();
                assert_eq!(found, searched, "{query} after {path}");
                assert_eq!(index.first_overlapping(&q), searched.first().copied());
            }
        }
    }
}
