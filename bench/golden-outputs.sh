#!/usr/bin/env bash
# golden-outputs.sh OUTDIR — runs every reading command, text and --json, on the
# bundled testdata and the wild fixtures (../shared/fixtures/wild when present),
# and writes each command's stdout, stderr and exit code to OUTDIR.
#
# Why: refactors must be behaviour-neutral. Run this on the base commit and on
# the change, then `diff -r BASE CHANGE`: any difference is a change in
# behaviour that must be intended and named.
#
# Every run gets a fresh HOME and state directory (so no user config or index
# leaks in) and a fixed clock where ctxtool honours one; times printed by
# commands that report durations are masked.
set -euo pipefail

out=${1:?usage: bench/golden-outputs.sh OUTDIR}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

bin="$work/ctxtool"
(cd "$root" && go build -o "$bin" .)

files=()
for f in "$root"/testdata/*.jsonl; do files+=("$f"); done
wild="$root/../shared/fixtures/wild"
if [ -d "$wild" ]; then
	while IFS= read -r f; do files+=("$f"); done < <(find "$wild" -name '*.jsonl' | sort)
fi

# mask: durations and absolute temp paths differ from run to run.
mask() {
	sed -E -e "s#$work#WORK#g" -e "s#$root#ROOT#g" \
		-e 's/[0-9]+(\.[0-9]+)?(ms|µs|s)\b/DUR/g' \
		-e 's@\([0-9.]+ [a-z]+/s\)@(RATE)@g' -e 's@[0-9.]+ (MB|MiB)/s@RATE@g' \
		-e 's/"(elapsed|durationMs|took|seconds)":[0-9.]+/"\1":DUR/g'
}

run() { # name args...
	local name=$1
	shift
	local home="$work/home-$name"
	rm -rf "$home"
	mkdir -p "$home/state" "$work/WS"
	set +e
	(cd "$work" && HOME="$home" XDG_CONFIG_HOME="$home/.config" XDG_STATE_HOME="$home/.state" \
		NO_COLOR=1 TZ=UTC "$bin" --state-dir "$home/state" "$@" \
		>"$out/$name.out" 2>"$out/$name.err")
	echo "exit $?" >>"$out/$name.out"
	set -e
	mask <"$out/$name.out" >"$out/$name.out.m" && mv "$out/$name.out.m" "$out/$name.out"
	mask <"$out/$name.err" >"$out/$name.err.m" && mv "$out/$name.err.m" "$out/$name.err"
}

for f in "${files[@]}"; do
	base=$(basename "$(dirname "$f")")-$(basename "$f" .jsonl)
	for tok in heuristic auto; do
		run "$base.estimate.$tok" estimate --tokenizer "$tok" "$f"
		run "$base.estimate.$tok.json" estimate --tokenizer "$tok" --json "$f"
	done
	run "$base.lint" lint --enable all "$f"
	run "$base.lint.json" lint --enable all --json "$f"
	run "$base.compact" compact --dry-run --summarizer extractive "$f"
	run "$base.compact.json" compact --dry-run --summarizer extractive --json "$f"
	run "$base.compact.safeguard" compact --dry-run --summarizer extractive --strategy safeguard "$f"
	run "$base.roll" roll --dry-run --tokenizer heuristic "$f"
	run "$base.roll.json" roll --dry-run --tokenizer heuristic --json "$f"
	run "$base.checkpoint" checkpoint --dry-run --force "$f"
	run "$base.checkpoint.json" checkpoint --dry-run --force --json "$f"
	run "$base.flush" flush --dry-run --force --summarizer extractive --workspace WS "$f"
	run "$base.budget.json" budget --json "$f"
	run "$base.export" export --to pi "$f"
done

# checkpoint then restore: the resume text a resumed agent reads.
for f in "${files[@]}"; do
	base=$(basename "$(dirname "$f")")-$(basename "$f" .jsonl)
	home="$work/home-cp"
	rm -rf "$home"
	mkdir -p "$home/state"
	(cd "$work" && HOME="$home" NO_COLOR=1 TZ=UTC "$bin" --state-dir "$home/state" checkpoint --force "$f" >/dev/null 2>&1 &&
		HOME="$home" NO_COLOR=1 TZ=UTC "$bin" --state-dir "$home/state" restore "$f" 2>&1 |
		sed -E 's/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z?/TIME/g' >"$out/$base.restore.out") ||
		echo "exit $?" >>"$out/$base.restore.out"
	mask <"$out/$base.restore.out" >"$out/r.m" && mv "$out/r.m" "$out/$base.restore.out"
done

# recall: one index over everything, then a few searches, text and JSON.
home="$work/home-recall"
mkdir -p "$home/state"
(cd "$work" && HOME="$home" NO_COLOR=1 TZ=UTC "$bin" --state-dir "$home/state" index "${files[@]}" \
	>"$out/recall.index.out" 2>"$out/recall.index.err") || echo "exit $?" >>"$out/recall.index.out"
for q in "compaction summary" "error" "SpeechRecognition pyttsx" "健身"; do
	name="recall.search.$(echo "$q" | tr -c 'A-Za-z0-9' '_')"
	for fmt in text json; do
		args=(search "$q")
		[ "$fmt" = json ] && args+=(--json)
		(cd "$work" && HOME="$home" NO_COLOR=1 TZ=UTC "$bin" --state-dir "$home/state" "${args[@]}" \
			>"$out/$name.$fmt.out" 2>"$out/$name.$fmt.err") || echo "exit $?" >>"$out/$name.$fmt.out"
	done
done
# the index table's last column is seconds spent on each file
awk '{ if (NF > 1 && $NF ~ /^[0-9]+\.[0-9]+$/) $NF = "SECS"; print }' "$out/recall.index.out" >"$out/ri" && mv "$out/ri" "$out/recall.index.out"
for f in "$out"/recall.*; do mask <"$f" >"$f.m" && mv "$f.m" "$f"; done
echo "$(ls "$out" | wc -l) files in $out from ${#files[@]} sessions"
