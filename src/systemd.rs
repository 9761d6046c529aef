//! systemd over D-Bus: transient units for step fires, unit resources, notify.
