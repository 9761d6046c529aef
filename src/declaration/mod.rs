//! The declaration, version 1: parse, validate, and the validated model.
