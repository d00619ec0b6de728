#!/usr/bin/env bash
# Reading cost of each transcript format against a pi file of the same size:
# builds ctxtool, generates a pi, a Claude Code and a Codex transcript of
# SIZE each (default 1GB) with bench/gen, runs `ctxtool estimate --tokenizer
# heuristic` on each in its own process and prints wall time and peak RSS,
# as ratios to the pi file.  usage: bench/formats.sh [SIZE] [DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE=${1:-1GB}
DIR=${2:-$(mktemp -d)}
go build -o "$DIR/ctxtool" .
for f in pi claude-code codex; do
	[ -f "$DIR/$f.jsonl" ] || go run ./bench/gen -format "$f" -preset "$( [ $f = pi ] && echo bench || echo '')" -size "$SIZE" -o "$DIR/$f.jsonl" 2>/dev/null
done
printf '%-12s %10s %8s %10s %9s %8s\n' FORMAT MB SECONDS "RATIO" "PEAK MB" RATIO
base_t=; base_m=
for f in pi claude-code codex; do
	out=$( { /usr/bin/time -f '%e %M' "$DIR/ctxtool" estimate --tokenizer heuristic --json "$DIR/$f.jsonl" >/dev/null; } 2>&1 | tail -1)
	t=${out% *}; m=${out#* }
	[ -z "$base_t" ] && base_t=$t && base_m=$m
	mb=$(( $(stat -L -c %s "$DIR/$f.jsonl") / 1000000 ))
	printf '%-12s %10s %8s %10s %9s %8s\n' "$f" "$mb" "$t" "$(echo "scale=2; $t/$base_t" | bc)" "$((m/1024))" "$(echo "scale=2; $m/$base_m" | bc)"
done
