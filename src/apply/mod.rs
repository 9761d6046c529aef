//! Apply: converge the machine to a declaration (see CONTRACT "Apply").
pub mod spec;
