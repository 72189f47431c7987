#!/bin/sh
# The tools' private tandemd (tools/daemon_launcher.cc) that fails to start leaves nothing behind: the
# tool exits with a clear error (not a crash) and its temporary folder is gone. A copy of `tandem`
# beside a fake tandemd that records its socket path and exits is run through `tandem demo`.
# usage: launcher_cleanup.sh TANDEM_BINARY
set -u
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$1" "$work/tandem"
cat > "$work/tandemd" <<'FAKE'
#!/bin/sh
while [ $# -gt 0 ]; do [ "$1" = "--socket" ] && echo "$2" > "$(dirname "$0")/socket_path"; shift; done
exit 3
FAKE
chmod +x "$work/tandemd"
"$work/tandem" demo --threads 1 > "$work/out" 2>&1
rc=$?
fail() { echo "launcher_cleanup: FAIL: $1"; cat "$work/out"; exit 1; }
[ "$rc" -ne 0 ] && [ "$rc" -lt 126 ] || fail "exit status $rc (want a clean failure)"
grep -q "exited during start-up" "$work/out" || fail "no message saying tandemd exited"
[ -f "$work/socket_path" ] || fail "the fake tandemd never ran"
folder=$(dirname "$(cat "$work/socket_path")")
[ ! -e "$folder" ] || fail "$folder was left behind"
echo "launcher_cleanup: ok"
