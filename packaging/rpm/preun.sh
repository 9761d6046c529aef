# mesh-host %preun, as %systemd_preun. $1: 0 on an erase, 1 or more when
# this version is being replaced by an upgrade (then it keeps running until
# %postun restarts it). Stopping the daemon stops a running step and closes
# its window: no held container is left stopped.
if [ "$1" -eq 0 ]; then
	systemctl --no-reload disable --now mesh-host.service >/dev/null 2>&1 || :
fi
