//! The state directory: lock, applied state, window records, atomic writes.
