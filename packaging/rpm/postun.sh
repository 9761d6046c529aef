# mesh-host %postun, as %systemd_postun_with_restart. $1: 0 after an erase,
# 1 or more after an upgrade. The state in /var/lib/mesh-host is kept on
# erase (rpm has no purge); a changed /etc/mesh-host/declaration.json is
# kept as .rpmsave.
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null 2>&1 || :
fi
if [ "$1" -ge 1 ]; then
	# Onto the new binary; only if it runs. The old daemon, on SIGTERM,
	# stops a running step and starts the containers its window held.
	systemctl try-restart mesh-host.service >/dev/null 2>&1 || :
fi
journalctl --update-catalog >/dev/null 2>&1 || :
if [ "$1" -eq 0 ]; then
	# The daemon's metrics (docs/metrics.md): with no daemon left they would
	# be exported, stale, for ever.
	rm -f /var/lib/prometheus/node-exporter/mesh-host.prom
	# The package owns no directory (see Cargo.toml): remove its own when
	# empty (a .rpmsave declaration keeps /etc/mesh-host).
	rmdir /usr/share/doc/mesh-host/examples /usr/share/doc/mesh-host /etc/mesh-host 2>/dev/null || :
fi
