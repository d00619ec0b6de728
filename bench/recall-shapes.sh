#!/usr/bin/env bash
# Recall's speed and size on the two corpus shapes of issue 33: Claude Code
# sessions (bench/gen -format claude-code, whole tool output) and CJK-heavy
# pi/OpenClaw sessions (the "bench" preset with 46% of the chunks CJK).
# Generates FILES files of SIZE per shape into DIR (kept: reruns skip it),
# then runs bench/recallbench on each and prints its table: cold index MB/s
# (wall and per CPU-second: the CPU figure is the one to compare on a loaded
# machine), index size / corpus, search p50/p95 (wall and thread CPU).
#
#   usage: nice bench/recall-shapes.sh [SIZE] [FILES] [DIR]
#          nice bench/recall-shapes.sh 25MB 4 /tmp/recall-shapes
#
# BACKEND=postgres|both runs recallbench against a throwaway PostgreSQL too.
# GEN_ONLY=1 only generates the corpora (bench/recall-peers.sh uses them).
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE=${1:-25MB}
FILES=${2:-4}
DIR=${3:-${TMPDIR:-/tmp}/recall-shapes}
BACKEND=${BACKEND:-sqlite}
mkdir -p "$DIR/claude-code" "$DIR/cjk"
go build -o "$DIR/gen" ./bench/gen
go build -o "$DIR/recallbench" ./bench/recallbench
for i in $(seq 1 "$FILES"); do
	f="$DIR/claude-code/s$i-$SIZE.jsonl"
	[ -s "$f" ] || "$DIR/gen" -format claude-code -size "$SIZE" -seed "$i" -o "$f" >/dev/null
	f="$DIR/cjk/s$i-$SIZE.jsonl"
	[ -s "$f" ] || "$DIR/gen" -preset bench -size "$SIZE" -seed "$i" -opts '{"CJKShare":0.46}' -o "$f" >/dev/null
done
[ -z "${GEN_ONLY:-}" ] || exit 0
for shape in claude-code cjk; do
	echo "== $shape: $FILES x $SIZE"
	rm -rf "$DIR/work-$shape"
	"$DIR/recallbench" -backend "$BACKEND" -corpus "$DIR/$shape" -dir "$DIR/work-$shape" -queries 300
	rm -rf "$DIR/work-$shape"
done
