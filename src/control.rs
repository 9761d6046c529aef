//! The control socket between the command line and the daemon.
