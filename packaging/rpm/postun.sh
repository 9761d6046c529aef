# mesh-host %postun, as %systemd_postun_with_restart. $1: 0 after an erase,
# 1 or more after an upgrade. The state in /var/lib/mesh-host and the
# node's declaration, /etc/mesh-host/declaration.json (no file of the
# package), are kept on erase: rpm has no purge.
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null 2>&1 || :
fi
if [ "$1" -ge 1 ]; then
	# Onto the new binary, only if it runs, without cutting a running step
	# short: the marker makes the old daemon's stop a hand-over (its
	# windows' records stay, their steps run on; the new daemon takes each
	# window over and closes it when its step ends). A plain `systemctl
	# stop` still stops the steps and closes their windows.
	if [ -d /run/mesh-host ] && systemctl --quiet is-active mesh-host.service; then
		: >/run/mesh-host/hand-over
	fi
	systemctl try-restart mesh-host.service >/dev/null 2>&1 || :
	rm -f /run/mesh-host/hand-over
fi
journalctl --update-catalog >/dev/null 2>&1 || :
if [ "$1" -eq 0 ]; then
	# The daemon's metrics (docs/metrics.md): with no daemon left they would
	# be exported, stale, for ever.
	rm -f /var/lib/prometheus/node-exporter/mesh-host.prom
	# The package owns no directory (see Cargo.toml): remove its own when
	# empty (the node's declaration keeps /etc/mesh-host).
	rmdir /usr/share/doc/mesh-host/examples /usr/share/doc/mesh-host /etc/mesh-host 2>/dev/null || :
	rmdir /usr/share/mesh-host/prometheus /usr/share/mesh-host 2>/dev/null || :
fi
