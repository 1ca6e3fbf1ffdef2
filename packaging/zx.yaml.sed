# sed script: conf/zx.example.yaml (the README's example) → the Debian
# package's /etc/zx/zx.yaml (packaging/debian/rules): data in /var/lib/zx,
# the control socket in /run/zx (RuntimeDirectory=zx), exports under the
# data folder, the push key from a file the package's postinst makes.
s|^\(  data_dir:\) *\./var\( *\)|\1 /var/lib/zx\2|
s|^\(  control_socket:\) *zxd\.sock.*|\1 /run/zx/zxd.sock  # RuntimeDirectory=zx of zxd.service|
s|\${env:ZX_WEB_EVENTS_KEY}|${file:/etc/zx/web_events.key}|
s|path: var/exports/|path: /var/lib/zx/exports/|
