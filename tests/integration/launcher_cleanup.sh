#!/bin/sh
# The tools' private tandemd (tools/daemon_launcher.cc) that fails to start leaves nothing behind: the
# tool exits with a clear error (not a crash) and its temporary folder is gone. A copy of `tandem`
# beside a fake tandemd that records its socket path, says why it cannot start and exits is run
# through `tandem demo`: the error repeats what the daemon said, naming the configuration as the
# user knows it, not the launcher's temporary copy.
# usage: launcher_cleanup.sh TANDEM_BINARY
set -u
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$1" "$work/tandem"
cat > "$work/tandemd" <<'FAKE'
#!/bin/sh
while [ $# -gt 0 ]; do
  [ "$1" = "--socket" ] && echo "$2" > "$(dirname "$0")/socket_path"
  [ "$1" = "--config" ] && config="$2"
  shift
done
echo "fake tandemd: $config: cannot start" >&2
exit 3
FAKE
chmod +x "$work/tandemd"
env -u TANDEM_CONFIG "$work/tandem" demo --threads 1 > "$work/out" 2>&1  # the message names the built-in default
rc=$?
fail() { echo "launcher_cleanup: FAIL: $1"; cat "$work/out"; exit 1; }
[ "$rc" -ne 0 ] && [ "$rc" -lt 126 ] || fail "exit status $rc (want a clean failure)"
grep -q "exited during start-up" "$work/out" || fail "no message saying tandemd exited"
grep -q "fake tandemd: <built-in default>: cannot start" "$work/out" || fail "the error does not repeat what tandemd said"
! grep -q "tandem.toml" "$work/out" || fail "the error names the launcher's temporary configuration"
[ -f "$work/socket_path" ] || fail "the fake tandemd never ran"
folder=$(dirname "$(cat "$work/socket_path")")
[ ! -e "$folder" ] || fail "$folder was left behind"

# Ctrl-C while the tool waits for its tandemd (here one that never answers): the folder goes too.
cat > "$work/tandemd" <<'FAKE'
#!/bin/sh
while [ $# -gt 0 ]; do [ "$1" = "--socket" ] && echo "$2" > "$(dirname "$0")/socket_path"; shift; done
exec sleep 30
FAKE
rm -f "$work/socket_path"
# A background job of a script starts with SIGINT ignored (and the shell cannot undo that): python
# restores the default before it runs the tool, as a terminal's Ctrl-C would find it.
python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])' \
  "$work/tandem" demo --threads 1 --calls 1 --rounds 1 > "$work/out" 2>&1 &
tool=$!
i=0
while [ ! -s "$work/socket_path" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
[ -s "$work/socket_path" ] || fail "the second fake tandemd never ran"
folder=$(dirname "$(cat "$work/socket_path")")
[ -d "$folder" ] || fail "$folder is not there while the tool waits"
kill -INT "$tool"
wait "$tool"
rc=$?
[ "$rc" -eq 130 ] || fail "exit status $rc after SIGINT (want 130: killed by the signal)"
[ ! -e "$folder" ] || fail "$folder was left behind after SIGINT"
echo "launcher_cleanup: ok"
