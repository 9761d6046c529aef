//! The clock the scheduler reads: the wall clock in production, a fake in tests.
