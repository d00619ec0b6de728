#!/usr/bin/env bash
# The scaling curve of every command (issue 17): generates one pi session per
# size with bench/gen's "bench" preset and the issue's shape — one session
# with a compaction every ~170k tokens (one per 594 kB: 1,808 at 1 GB), so
# the active context stays the same size while the file grows —, cached in
# DIR so reruns skip it, runs each command RUNS times in
# its own process and prints the median wall time, CPU time (user+sys) and
# peak RSS per size. pi's own loader (SessionManager.open +
# buildSessionContext + estimateTokens, bench/estimate/pi-estimate.mjs) is the
# peer: its row says "fails" where it cannot load the file, and the ratio
# columns compare each command with it at the same size. "grow" is the wall
# time growth from the previous size divided by the size growth (1.0 is
# linear, the issue's bound is 1.3 per decade); "cgrow" is the same for CPU
# time, which the load of a shared machine disturbs less.
#
#   usage: nice bench/curve.sh [SIZES] [RUNS] [DIR]
#          nice bench/curve.sh "10MB 100MB 1GB" 3 /tmp/ctxtool-curve
#
# Needs GNU time (/usr/bin/time) and, for the pi peer, node with the oracle
# installed (internal/oracle/js/install.sh); without node the pi rows say
# "no node". ONLY=regex limits the commands (e.g. ONLY='estimate|lint').
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES=${1:-10MB 100MB 1GB}
RUNS=${2:-3}
DIR=${3:-${TMPDIR:-/tmp}/ctxtool-curve}
ONLY=${ONLY:-.}
mkdir -p "$DIR"
go build -o "$DIR/ctxtool" .
export CTXTOOL_STATE_DIR="$DIR/state" PI_ORACLE=${PI_ORACLE:-$PWD/internal/oracle/js}

# The commands, "label|argv" (FILE is the session, IDX a fresh index path).
COMMANDS=(
	"pi load+estimate (peer)|PI"
	"estimate heuristic|estimate --tokenizer heuristic --json FILE"
	"estimate calibrated|estimate --tokenizer calibrated --json FILE"
	"estimate auto|estimate --tokenizer auto --json FILE"
	"compact --dry-run|compact --dry-run --json FILE"
	"roll --dry-run --trigger 0|roll --dry-run --trigger 0 --json FILE"
	"checkpoint --force|checkpoint --force --json FILE"
	"index (cold)|index --index IDX --json FILE"
	"lint|lint --format json FILE"
)

# one RUN: prints "wall cpu rssKB rc" of one process.
one() {
	local t
	t=$(mktemp)
	set +e
	/usr/bin/time -o "$t" -f '%e %U %S %M %x' "$@" >/dev/null 2>"$t.err"
	set -e
	# GNU time writes "Command exited with non-zero status N" first on failure.
	tail -1 "$t" | awk '{printf "%s %.2f %s %s\n", $1, $2+$3, $4, $5}'
	rm -f "$t" "$t.err"
}

# compactions SIZE: one per 594 kB of the target size (~170k tokens of
# this generator's content), as in the issue's measurements.
compactions() {
	local n=${1%[KMG]B} unit=${1: -2}
	case $unit in KB) n=$((n << 10)) ;; MB) n=$((n << 20)) ;; GB) n=$((n << 30)) ;; esac
	echo $((n / 594000 > 0 ? n / 594000 : 1))
}

median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) print "-"; else print a[int((NR+1)/2)]}'; }

printf '%-28s %6s %8s %8s %8s %7s %7s %6s %6s %s\n' COMMAND SIZE "WALL s" "CPU s" "RSS MB" "t/pi" "rss/pi" grow cgrow note
for size in $SIZES; do
	f="$DIR/s$size-c170k.jsonl"
	if [ ! -s "$f" ]; then
		go run ./bench/gen -preset bench -size "$size" -opts "{\"Compactions\": $(compactions "$size")}" -o "$f.tmp" >/dev/null
		mv "$f.tmp" "$f"
	fi
	mb=$(($(stat -L -c %s "$f") / 1000000)) # -L: the cached file may be a link
	pi_wall=; pi_rss=
	for c in "${COMMANDS[@]}"; do
		label=${c%%|*}
		argv=${c#*|}
		[[ $label =~ $ONLY || $argv == PI ]] || continue
		walls=(); cpus=(); rsss=(); note=
		for ((r = 0; r < RUNS; r++)); do
			if [ "$argv" = PI ]; then
				if ! command -v node >/dev/null || [ ! -d "$PI_ORACLE/node_modules" ]; then
					note="no node/oracle"; break
				fi
				out=$(one node bench/estimate/pi-estimate.mjs "$f")
			else
				idx="$DIR/index-$size.sqlite"
				rm -f "$idx" "$idx"-*
				cmd=${argv//FILE/$f}
				cmd=${cmd//IDX/$idx}
				# shellcheck disable=SC2086
				out=$(one "$DIR/ctxtool" $cmd)
			fi
			read -r w cpu rss rc <<<"$out"
			# lint exits 1 when it finds errors: that is a result, not a failure.
			if [ "$rc" != 0 ] && ! { [ "$label" = lint ] && [ "$rc" = 1 ]; }; then
				note="fails (exit $rc after ${w}s at $((rss / 1024)) MB)"
				break
			fi
			walls+=("$w"); cpus+=("$cpu"); rsss+=("$rss")
		done
		if [ -n "$note" ]; then
			printf '%-28s %6s %8s %8s %8s %7s %7s %6s %6s %s\n' "$label" "$size" - - - - - - - "$note"
			continue
		fi
		w=$(printf '%s\n' "${walls[@]}" | median)
		cpu=$(printf '%s\n' "${cpus[@]}" | median)
		rss=$(($(printf '%s\n' "${rsss[@]}" | median) / 1024))
		if [ "$argv" = PI ]; then pi_wall=$w; pi_rss=$rss; fi
		tr=-; rr=-
		if [ -n "$pi_wall" ] && [ "$argv" != PI ]; then
			tr=$(awk -v a="$w" -v b="$pi_wall" 'BEGIN{printf "%.2f", a/b}')
			rr=$(awk -v a="$rss" -v b="$pi_rss" 'BEGIN{printf "%.2f", a/b}')
		fi
		key=$(echo "$label" | tr -c 'a-z0-9' _)
		prev_w=$(eval echo "\${prev_w_$key:-}")
		prev_c=$(eval echo "\${prev_c_$key:-}")
		prev_mb=$(eval echo "\${prev_mb_$key:-}")
		grow=-; cgrow=-
		if [ -n "$prev_w" ]; then
			ratio='BEGIN{if (b>0) printf "%.2f", (a/b)/(m/p); else print "-"}'
			grow=$(awk -v a="$w" -v b="$prev_w" -v m="$mb" -v p="$prev_mb" "$ratio")
			cgrow=$(awk -v a="$cpu" -v b="$prev_c" -v m="$mb" -v p="$prev_mb" "$ratio")
		fi
		eval "prev_w_$key=$w; prev_c_$key=$cpu; prev_mb_$key=$mb"
		printf '%-28s %6s %8s %8s %8s %7s %7s %6s %6s %s\n' "$label" "$size" "$w" "$cpu" "$rss" "$tr" "$rr" "$grow" "$cgrow" "$note"
	done
done
