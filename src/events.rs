//! Journal events: names, MESSAGE_IDs, and the logging setup.
