//! The container runtime behind a small trait; Docker Engine API via bollard.
