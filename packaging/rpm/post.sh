# mesh-host %post, as the systemd macros (%systemd_post) have it, written
# out because cargo-generate-rpm expands no macros. $1: 1 on a first
# install, 2 or more on an upgrade.

# The node's declaration is its own data, not a %config file (provisioning
# may have written it before this install; `mesh-host apply FILE` rewrites
# it): an empty one, declaring nothing, 0600, is made only when none exists.
decl=/etc/mesh-host/declaration.json
if [ ! -e "$decl" ] && [ ! -L "$decl" ]; then
	mkdir -p /etc/mesh-host
	chmod 0755 /etc/mesh-host
	tmp=$(mktemp /etc/mesh-host/.declaration.json.XXXXXX)
	printf '{"declaration":1,"resources":[]}\n' >"$tmp"
	chmod 0600 "$tmp"
	mv -f "$tmp" "$decl"
fi
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
