#!/usr/bin/env bash
# Build real OpenClaw cold archives, offline, from pi-format JSONL files.
# usage: cold.sh OUT_HOME file1.jsonl [file2.jsonl ...]
# Prints one line per session: its id, a tab, and its archive's path
# (OUT_HOME/.openclaw/agents/main/sessions/cold/<sha256>.jsonl.zst).
#
# OpenClaw writes cold archives only from a running Gateway with
# session.maintenance.coldStorage.enabled, for sessions idle longer than
# afterDays (30). So: ../shared/tools/openclaw-store/gen-store.sh imports
# the files into a real store (Node 24 and openclaw@2026.9.6 from npm), then
# the Gateway runs on loopback under libfaketime at +40 days (the sessions look
# 40 days idle; it checks at startup and once a minute) until the store
# records an archive for every session, and is stopped (its process group,
# by id). Needs npm, python3 and faketime (Debian's faketime package); gives
# up after ${OPENCLAW_COLD_TIMEOUT:-420} seconds.
set -euo pipefail
OUT=$1; shift
HERE=$(cd "$(dirname "$0")" && pwd)
T=${OPENCLAW_TOOLS:-$HOME/.cache/ctxtool-openclaw}
command -v faketime >/dev/null || { echo "cold.sh: faketime not found (apt-get install faketime)" >&2; exit 1; }
# The library, preloaded directly: the faketime wrapper keeps a semaphore and
# shared memory named after its pid in /dev/shm, which the Gateway's stop
# (its process group killed) leaves behind; a later wrapper whose pid matches
# a leftover fails ("sem_open: File exists"). An offset needs none of that.
libfaketime=$(find /usr/lib /usr/local/lib /usr/lib64 -name libfaketime.so.1 -path '*faketime*' 2>/dev/null | head -1)
[ -n "$libfaketime" ] || { echo "cold.sh: libfaketime.so.1 not found (apt-get install faketime)" >&2; exit 1; }

db=$(bash "$HERE/../../../shared/tools/openclaw-store/gen-store.sh" "$OUT" "$@")
export PATH="$T/node24/node_modules/.bin:$PATH"
cat >"$OUT/.openclaw/openclaw.json" <<EOF
{
  "session": { "maintenance": { "coldStorage": { "enabled": true, "afterDays": 30 } } },
  "logging": { "file": "$OUT/gateway.log" }
}
EOF

# archives prints the sessions the store has moved to cold archive files,
# with their paths (the row is written after the file is published and
# verified; storage "sqlite" would keep the archive in the database).
archives() {
	python3 - "$db" "$(dirname "$(dirname "$db")")/sessions/cold" <<'EOF'
import os, sqlite3, sys
c = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True, timeout=10)
try:
    rows = c.execute("SELECT session_id, archive_name FROM session_transcript_cold_archives WHERE storage = 'file'")
    for sid, name in rows:
        print(sid + "\t" + os.path.join(sys.argv[2], name))
except sqlite3.OperationalError:
    pass
EOF
}

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
HOME="$OUT" OPENCLAW_DISABLE_BONJOUR=1 OPENCLAW_NO_RESPAWN=1 OPENCLAW_SKIP_CHANNELS=1 \
	OPENCLAW_EXEC_SHELL_SNAPSHOT=0 LD_PRELOAD="$libfaketime" FAKETIME='+40d' setsid \
	node "$T/oc/node_modules/openclaw/openclaw.mjs" gateway run --allow-unconfigured \
	--bind loopback --auth token --token "cold-$RANDOM$RANDOM" --port "$port" \
	>"$OUT/gateway.out" 2>&1 </dev/null &
pgid=$! # setsid made the Gateway's process group; its spawn broker exits with it
stop() {
	kill -TERM -- "-$pgid" 2>/dev/null || return 0
	for _ in $(seq 1 60); do
		kill -0 -- "-$pgid" 2>/dev/null || return 0
		sleep 0.5
	done
	kill -KILL -- "-$pgid" 2>/dev/null || true
}
trap stop EXIT

deadline=$((SECONDS + ${OPENCLAW_COLD_TIMEOUT:-420}))
while [ "$(archives | wc -l)" -lt $# ]; do
	if [ $SECONDS -ge $deadline ] || ! kill -0 -- "-$pgid" 2>/dev/null; then
		echo "cold.sh: the Gateway archived $(archives | wc -l) of $# sessions in ${OPENCLAW_COLD_TIMEOUT:-420} s (or exited); its output:" >&2
		tail -40 "$OUT/gateway.out" >&2
		exit 1
	fi
	sleep 2
done
stop
archives
