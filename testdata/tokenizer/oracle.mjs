// oracle.mjs - OpenAI's tokenizer as shipped in js-tiktoken, for the Go parity tests
// of pkg/tokenizer. Usage:
//
//   node oracle.mjs ORACLE_DIR MODE SAMPLES.json [o200k|cl100k ...]
//
// ORACLE_DIR holds node_modules/js-tiktoken (shared/oracle, see its install.sh).
// SAMPLES.json is a JSON array of strings. MODE:
//   counts  js-tiktoken's own encode(text, [], []) per sample (special tokens as text).
//   fast    js-tiktoken's regex and rank map, but an O(n log n) heap merge instead of
//           its O(n^3) bytePairMerge, for pieces too long for it (200k spaces would
//           take hours). Before answering it checks that the heap merge equals
//           js-tiktoken's bytePairMerge on every piece of up to $ORACLE_CHECK_BYTES
//           (default 1500) bytes.
//   bench   times js-tiktoken's encode over all samples (3 rounds, best wall and CPU
//           time kept; counts[0] is the total token count).
// Output: one JSON object {encoding: {counts: [n...], hashes: [fnv1a32 of ids...],
// ms, cpuMs (bench), bytes, checked (pieces compared with js-tiktoken's merge in fast mode)}}
// for each encoding asked for (default both).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [dir, mode, file, ...encodings] = process.argv.slice(2);
const mod = (p) => import(pathToFileURL(join(dir, "node_modules", "js-tiktoken", "dist", p)).href);
const { Tiktoken } = await mod("lite.js");
const ranks = {};
for (const name of encodings.length ? encodings : ["o200k", "cl100k"]) {
  ranks[name] = (await mod(`ranks/${name}_base.js`)).default;
}
const samples = JSON.parse(readFileSync(file, "utf8"));
const bytes = samples.reduce((n, s) => n + Buffer.byteLength(s), 0);

function fnv(ids) {
  let h = 2166136261;
  for (const id of ids) h = Math.imul(h ^ id, 16777619) >>> 0;
  return h;
}

// Heap merge: same rule as tiktoken (lowest rank first, leftmost on ties).
function heapMerge(piece, rankMap) {
  const n = piece.length;
  const key = (a, b) => rankMap.get(Array.prototype.join.call(piece.subarray(a, b), ","));
  const next = new Int32Array(n), prev = new Int32Array(n), pr = new Float64Array(n);
  for (let i = 0; i < n; i++) { next[i] = i + 1; prev[i] = i - 1; }
  const rankOf = (i) => (next[i] >= n ? Infinity : key(i, next[next[i]]) ?? Infinity);
  const heap = []; // [rank, start]
  const less = (x, y) => x[0] < y[0] || (x[0] === y[0] && x[1] < y[1]);
  const push = (x) => { heap.push(x); let i = heap.length - 1; while (i > 0) { const p = (i - 1) >> 1; if (!less(heap[i], heap[p])) break; [heap[i], heap[p]] = [heap[p], heap[i]]; i = p; } };
  const pop = () => { const top = heap[0], last = heap.pop(); if (heap.length) { heap[0] = last; let i = 0; for (;;) { let c = 2 * i + 1; if (c >= heap.length) break; if (c + 1 < heap.length && less(heap[c + 1], heap[c])) c++; if (!less(heap[c], heap[i])) break; [heap[i], heap[c]] = [heap[c], heap[i]]; i = c; } } return top; };
  for (let i = 0; i < n; i++) { pr[i] = rankOf(i); if (pr[i] !== Infinity) push([pr[i], i]); }
  while (heap.length) {
    const [r, i] = pop();
    if (prev[i] === -2 || pr[i] !== r) continue;
    const j = next[i];
    next[i] = next[j]; if (next[j] < n) prev[next[j]] = i; prev[j] = -2;
    pr[i] = rankOf(i); if (pr[i] !== Infinity) push([pr[i], i]);
    const k = prev[i]; if (k >= 0) { pr[k] = rankOf(k); if (pr[k] !== Infinity) push([pr[k], k]); }
  }
  const ids = [];
  for (let i = 0; i < n; i = next[i]) ids.push(key(i, next[i]));
  return ids;
}

// js-tiktoken's bytePairMerge, copied from its dist/chunk (not exported).
function jsMerge(piece, rankMap) {
  let parts = Array.from({ length: piece.length }, (_, i) => ({ start: i, end: i + 1 }));
  while (parts.length > 1) {
    let minRank = null;
    for (let i = 0; i < parts.length - 1; i++) {
      const rank = rankMap.get(piece.slice(parts[i].start, parts[i + 1].end).join(","));
      if (rank == null) continue;
      if (minRank == null || rank < minRank[0]) minRank = [rank, i];
    }
    if (minRank == null) break;
    const i = minRank[1];
    parts[i] = { start: parts[i].start, end: parts[i + 1].end };
    parts.splice(i + 1, 1);
  }
  return parts.map((p) => rankMap.get(piece.slice(p.start, p.end).join(",")));
}

const CHECK_BYTES = Number(process.env.ORACLE_CHECK_BYTES || 1500);
const out = {};
for (const [name, r] of Object.entries(ranks)) {
  const enc = new Tiktoken(r);
  const counts = [], hashes = [];
  let ms = Infinity, cpuMs = 0, checked = 0;
  if (mode === "counts") {
    const t0 = performance.now();
    for (const s of samples) { const ids = enc.encode(s, [], []); counts.push(ids.length); hashes.push(fnv(ids)); }
    ms = performance.now() - t0;
  } else if (mode === "bench") {
    cpuMs = Infinity;
    for (let round = 0; round < 3; round++) {
      const t0 = performance.now(), c0 = process.cpuUsage();
      let n = 0;
      for (const s of samples) n += enc.encode(s, [], []).length;
      const c = process.cpuUsage(c0);
      ms = Math.min(ms, performance.now() - t0);
      cpuMs = Math.min(cpuMs, (c.user + c.system) / 1000);
      counts[0] = n;
    }
  } else if (mode === "fast") {
    const re = new RegExp(enc.patStr, "ug"), te = new TextEncoder();
    const t0 = performance.now();
    for (const s of samples) {
      const ids = [];
      for (const m of s.matchAll(re)) {
        const piece = te.encode(m[0]);
        const whole = enc.rankMap.get(piece.join(","));
        if (whole != null) { ids.push(whole); continue; }
        const got = heapMerge(piece, enc.rankMap);
        if (piece.length <= CHECK_BYTES) {
          const want = jsMerge(piece, enc.rankMap);
          if (want.join() !== got.join()) throw new Error(`heap merge differs from js-tiktoken on ${JSON.stringify(m[0])}`);
          checked++;
        }
        for (const id of got) ids.push(id);
      }
      counts.push(ids.length); hashes.push(fnv(ids));
    }
    ms = performance.now() - t0;
  } else {
    throw new Error("unknown mode " + mode);
  }
  out[name] = { counts, hashes, ms, cpuMs, bytes, checked };
}
process.stdout.write(JSON.stringify(out) + "\n");
