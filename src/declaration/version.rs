//! What version of the declaration this host reads, and its JSON Schema:
//! shared by the parser, the model's serialisation and the hints.

/// The declaration's JSON Schema (`mesh-host schema`): the shape of each
/// field, for editors. [`super::parse`] is the authority; tests check that the
/// two agree on the examples and that every field the model has is in it.
pub const SCHEMA: &str = include_str!("schema.json");

/// The only declaration version this host reads.
pub const VERSION: u64 = 1;
