//! A container's process options, held only when set.

use std::ops::{Deref, DerefMut};
use std::sync::LazyLock;

use super::ProcessSpec;

/// [`ProcessSpec`] allocated only when it is not all defaults: most
/// containers set none of it, and a node of thousands of scheduled steps
/// carried its 488 bytes inline in every step's spec. Reads see the
/// defaults through `Deref`; a write allocates it. Equal by value: unset
/// and set to the defaults are the same options.
#[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct ProcessOptions(Option<Box<ProcessSpec>>);

/// What an unset [`ProcessOptions`] reads as.
static DEFAULTS: LazyLock<ProcessSpec> = LazyLock::new(ProcessSpec::default);

impl From<ProcessSpec> for ProcessOptions {
    fn from(spec: ProcessSpec) -> Self {
        if spec == *DEFAULTS {
            ProcessOptions(None)
        } else {
            ProcessOptions(Some(Box::new(spec)))
        }
    }
}

impl Deref for ProcessOptions {
    type Target = ProcessSpec;

    fn deref(&self) -> &ProcessSpec {
        self.0.as_deref().unwrap_or(&DEFAULTS)
    }
}

impl DerefMut for ProcessOptions {
    fn deref_mut(&mut self) -> &mut ProcessSpec {
        self.0.get_or_insert_with(Box::default)
    }
}

impl PartialEq for ProcessOptions {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for ProcessOptions {}

impl std::fmt::Debug for ProcessOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_take_no_allocation_and_equal_options_set_to_them() {
        let unset = ProcessOptions::default();
        assert!(unset.0.is_none());
        assert_eq!(unset, ProcessOptions::from(ProcessSpec::default()));
        assert!(ProcessOptions::from(ProcessSpec::default()).0.is_none());
        assert_eq!(*unset, ProcessSpec::default());
        let mut set = ProcessOptions(None);
        // A write through DerefMut allocates.
        set.init = true;
        assert!(set.0.is_some());
        assert_ne!(set, unset);
        assert!(set.init && !unset.init);
        assert_eq!(
            set,
            ProcessOptions::from(ProcessSpec {
                init: true,
                ..ProcessSpec::default()
            })
        );
    }
}
