#!/usr/bin/env bash
# Recall against its peers on the same generated corpora, in one run (issue
# 33): ctxtool, agentsview (github.com/wesm/agentsview) and deja-vu
# (github.com/vshulcz/deja-vu), on bench/recall-shapes.sh's two shapes
# (Claude Code; CJK-heavy pi). For each tool and shape: cold index (wall
# MB/s, MB per CPU-second of the process, peak RSS), index size / corpus,
# and search end to end over the same queries (recallbench -list-queries):
# a process per query for ctxtool and deja (wall, and the process's own CPU,
# which a loaded machine does not inflate), one HTTP request per query to
# agentsview's server (wall; its CPU is the server's mean per query).
#
# The peers are not part of this repository. Build them from their own
# repositories and name the binaries; an unnamed peer is skipped:
#   agentsview: mkdir -p internal/web/dist && echo ok >internal/web/dist/stub.html
#               CGO_ENABLED=1 go build -tags fts5 -o agentsview ./cmd/agentsview
#   deja-vu:    go build -o deja ./cmd/deja
#
#   usage: AGENTSVIEW=/path/agentsview DEJA=/path/deja nice bench/recall-peers.sh [SIZE] [FILES] [DIR]
#   QUERIES=N (default 100) queries per tool; SHAPES="claude-code" for one shape;
#   BASE=/path/ctxtool adds a row for another ctxtool build (say, main's) as a "before"
#   (1 GB of Claude Code: SHAPES=claude-code bench/recall-peers.sh 25MB 40 DIR).
#
# agentsview reads no pi or OpenClaw sessions, so it has no CJK-heavy row.
# Every tool runs with HOME set to an empty directory, so it finds only
# the corpus.
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE=${1:-25MB}
FILES=${2:-4}
DIR=${3:-${TMPDIR:-/tmp}/recall-shapes}
NQ=${QUERIES:-100}
SHAPES=${SHAPES:-claude-code cjk}
GEN_ONLY=1 bench/recall-shapes.sh "$SIZE" "$FILES" "$DIR"
go build -o "$DIR/ctxtool" .
go build -o "$DIR/recallbench" ./bench/recallbench
go build -o "$DIR/e2etime" ./bench/e2etime
W="$DIR/peers"
rows=()

# row TOOL SHAPE BYTES WALL_S CPU_S RSS_KB INDEX_BYTES SEARCH
row() {
	rows+=("$(awk -v t="$1" -v s="$2" -v b="$3" -v w="$4" -v c="$5" -v r="$6" -v i="$7" -v q="$8" 'BEGIN {
		printf "| %s | %s | %.1f MB/s | %.1f MB/CPU-s | %.0f MB | %.0f%% | %s |", s, t, b/1e6/w, b/1e6/c, r/1024, 100*i/b, q }')")
}

# timed CMD...: runs CMD and leaves its wall, CPU seconds and peak RSS (KB) in T_WALL T_CPU T_RSS.
timed() {
	local out
	out=$(/usr/bin/time -f "%e %U %S %M" "$@" 2>&1 >/dev/null | tail -1)
	read -r T_WALL u s T_RSS <<<"$out"
	T_CPU=$(awk -v u="$u" -v s="$s" 'BEGIN { print u + s }')
}

for shape in $SHAPES; do
	corpus="$DIR/$shape"
	bytes=$(cat "$corpus"/*.jsonl | wc -c)
	"$DIR/recallbench" -corpus "$corpus" -list-queries -queries "$NQ" >"$DIR/queries-$shape.txt"
	echo "== $shape: $FILES x $SIZE, load average $(cut -d' ' -f1-3 /proc/loadavg)"

	# ctxtool (and the BASE build)
	for tool in ${BASE:+base} ctxtool; do
		bin="$DIR/ctxtool"
		[ "$tool" = ctxtool ] || bin=$BASE
		rm -rf "$W" && mkdir -p "$W/home"
		timed env HOME="$W/home" "$bin" index --state-dir "$W/ct" "$corpus"
		size=$(cat "$W/ct/recall/"index.sqlite* | wc -c)
		q=$("$DIR/e2etime" -q "$DIR/queries-$shape.txt" -- env HOME="$W/home" "$bin" search --state-dir "$W/ct" --json {})
		row "$tool" "$shape" "$bytes" "$T_WALL" "$T_CPU" "$T_RSS" "$size" "$q"
	done

	# deja-vu: pi sessions under DEJA_PI_ROOT/<project>/, Claude Code under DEJA_CLAUDE_ROOT/<project>/.
	if [ -n "${DEJA:-}" ]; then
		rm -rf "$W" && mkdir -p "$W/home" "$W/src/proj"
		ln "$corpus"/*.jsonl "$W/src/proj/"
		if [ "$shape" = cjk ]; then root=(DEJA_PI_ROOT="$W/src"); else root=(DEJA_CLAUDE_ROOT="$W/src"); fi
		timed env HOME="$W/home" "${root[@]}" "$DEJA" index
		size=$(du -sb "$W/home/.cache/deja" | cut -f1)
		q=$("$DIR/e2etime" -q "$DIR/queries-$shape.txt" -- env HOME="$W/home" "${root[@]}" "$DEJA" search --json {})
		row deja-vu "$shape" "$bytes" "$T_WALL" "$T_CPU" "$T_RSS" "$size" "$q"
	fi

	# agentsview: a server that syncs before it listens; Claude Code only.
	if [ -n "${AGENTSVIEW:-}" ] && [ "$shape" = claude-code ]; then
		rm -rf "$W" && mkdir -p "$W/home" "$W/src/-home-dev-acme"
		for f in "$corpus"/*.jsonl; do # a Claude Code session file is named by its session id
			ln "$f" "$W/src/-home-dev-acme/$(grep -m1 -o '"sessionId":"[^"]*"' "$f" | cut -d'"' -f4).jsonl"
		done
		port=$((20000 + RANDOM % 20000))
		start=$EPOCHREALTIME
		HOME="$W/home" AGENT_VIEWER_DATA_DIR="$W/av" CLAUDE_PROJECTS_DIR="$W/src" \
			"$AGENTSVIEW" -no-browser -port "$port" >"$W/av.log" 2>&1 &
		pid=$!
		until grep -q listening "$W/av.log"; do
			kill -0 "$pid" 2>/dev/null || { cat "$W/av.log"; exit 1; }
			sleep 0.05
		done
		wall=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { print b - a }')
		read -r ut st < <(sed 's/.*) //' "/proc/$pid/stat" | awk '{ print $12, $13 }')
		cpu=$(awk -v u="$ut" -v s="$st" -v hz="$(getconf CLK_TCK)" 'BEGIN { print (u + s) / hz }')
		rss=$(awk '/VmHWM/ { print $2 }' "/proc/$pid/status")
		port=$(grep -o 'listening at http://[^ ]*' "$W/av.log" | sed 's/.*://')
		q=$("$DIR/e2etime" -q "$DIR/queries-$shape.txt" -url "http://127.0.0.1:$port/api/v1/search?limit=10" -param q -pid "$pid")
		kill "$pid"
		wait "$pid" || true
		# Its write-ahead log folded in, as ctxtool's and deja's are at exit.
		if command -v python3 >/dev/null; then
			python3 -c 'import sqlite3, sys; sqlite3.connect(sys.argv[1]).execute("PRAGMA wal_checkpoint(TRUNCATE)")' "$W/av/sessions.db"
		fi
		size=$(cat "$W/av/"sessions.db* | wc -c)
		row agentsview "$shape" "$bytes" "$wall" "$cpu" "$rss" "$size" "$q (HTTP)"
	fi
	rm -rf "$W"
done
echo
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) CPUs)"
echo "| corpus | tool | cold index (wall) | cold index (CPU) | peak RSS | index / corpus | search, end to end |"
echo "|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
