# mesh-host %post, as the systemd macros (%systemd_post) have it, written
# out because cargo-generate-rpm expands no macros. $1: 1 on a first
# install, 2 or more on an upgrade.
if [ "$1" -eq 1 ]; then
	# Enabled or not as the system's preset policy says (RHEL and Fedora:
	# disabled unless a preset enables it; `systemctl enable --now
	# mesh-host` then starts it).
	systemctl --no-reload preset mesh-host.service >/dev/null 2>&1 || :
fi
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null 2>&1 || :
fi
journalctl --update-catalog >/dev/null 2>&1 || :
