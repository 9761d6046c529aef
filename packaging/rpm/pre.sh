# mesh-host %pre. $1: 1 on a first install, 2 or more on an upgrade.
# Earlier packages shipped /etc/mesh-host/declaration.json as a
# %config(noreplace) file; rpm removes (or renames to .rpmsave) a file the
# old package owned and the new one does not, once the new one is in. The
# node's declaration is kept aside here (a hard link: the same content
# whatever rpm does to the name) and put back by %posttrans.
if [ "$1" -ge 2 ] && [ -f /etc/mesh-host/declaration.json ] && [ ! -L /etc/mesh-host/declaration.json ]; then
	ln -f /etc/mesh-host/declaration.json /etc/mesh-host/.declaration.json.upgrade 2>/dev/null || :
fi
