# mesh-host %posttrans: after the whole transaction, the node's declaration
# is where the daemon reads it. The one %pre kept aside goes back if an
# older package's removal took it away; an empty one (0600) is made only
# when there is none at all.
decl=/etc/mesh-host/declaration.json
kept=/etc/mesh-host/.declaration.json.upgrade
if [ -f "$kept" ]; then
	if [ ! -e "$decl" ] && [ ! -L "$decl" ]; then
		mv -f "$kept" "$decl"
		# The .rpmsave the removal made is the same file: not a leftover.
		if [ -f "$decl.rpmsave" ] && cmp -s "$decl" "$decl.rpmsave"; then
			rm -f "$decl.rpmsave"
		fi
	else
		rm -f "$kept"
	fi
fi
if [ ! -e "$decl" ] && [ ! -L "$decl" ]; then
	mkdir -p /etc/mesh-host
	chmod 0755 /etc/mesh-host
	tmp=$(mktemp /etc/mesh-host/.declaration.json.XXXXXX)
	printf '{"declaration":1,"resources":[]}\n' >"$tmp"
	chmod 0600 "$tmp"
	mv -f "$tmp" "$decl"
fi
