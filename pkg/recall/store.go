// Package recall is ctxtool's memory search over session transcripts: an
// index of every message of every session file — including what compactions
// and rolls removed from the active context — searched with BM25 scored like
// OpenClaw's memory_search, optionally mixed with embedding similarity.
//
// Rolling mode drops messages from the context and trusts recall to bring
// them back; `roll` therefore asks Covered before evicting and calls Index
// when the index is behind.
//
// Two stores hold the same rows (same chunking, citations and incremental
// bookkeeping; see backend):
//   - SQLite (the embedded default): <stateDir>/recall/index.sqlite (WAL
//     mode) and its FTS file beside it, index.sqlite.fts: FTS5 with a
//     table of CJK character pairs, written in parallel (see ftsSchema). Safe to
//     share between processes on one machine: writes take SQLite's write
//     locks up front (BEGIN IMMEDIATE) and wait up to 30 s for them. It
//     stores no text for the chunks of pi and OpenClaw JSONL files: their
//     text is extracted again from the session file (reread.go).
//   - PostgreSQL (OpenURL("postgres://…"), config recall.url): one database
//     for a fleet of machines; tsvector + GIN, pg_trgm for CJK; every file is
//     written in its own transaction under a per-file advisory lock, so any
//     number of indexers may run at once.
//
// Every file is indexed all-or-nothing: a kill at any moment leaves the
// index as it was before that file, and the next run completes it.
//
// Use:
//
//	ix, err := recall.Open(stateDir)             // or OpenURL(url); WithEmbedder(e) for hybrid search
//	defer ix.Close()
//	ok, err := ix.Covered(path)                   // every complete line indexed?
//	st, err := ix.Index(ctx, path)                // bring one file up to date
//	err = ix.IndexFiles(ctx, paths, report)       // many files, batched commits
//	res, err := ix.Search(ctx, "query", recall.SearchOptions{MaxResults: 6, MinScore: 0.35})
//
// A Hit cites the session file and its physical JSONL lines
// (Hit.Path, StartLine, EndLine, Citation "path#Lstart-Lend") and the entry
// ids on them (Hit.EntryIDs): this citation shape is the stable contract for
// callers (roll, search, compact --truncate, the VS7 budget).
//
// Known limits: an in-place edit of a file's middle that keeps its size is
// caught only when it touches a sampled block;
// vector search is a brute-force scan of every stored embedding (fine for
// tens of thousands of chunks, slow beyond).
//
// It must not modify session files: the index is a cache that can always be
// rebuilt from them.
package recall

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// schemaVersion changes whenever the tables or the extraction/chunking
// rules change; an index of an older version is rebuilt from scratch (it is
// a cache of the transcripts, nothing in it is original), one of a newer
// version is refused (newerIndex).
//
// Version 13 ranks (scope columns, whole tool text), redacts secrets and
// stores SQLite's chunk text compressed (textz.go). Version 14 stores no
// text for the chunks of plain pi JSONL files, only where to read it again
// (reread.go); an index of 13 is emptied on open and rebuilt by the next
// index run. An index built without redaction
// (recall.redact: false) carries another version, so turning redaction back
// on rebuilds it rather than keep serving the secrets it holds.
const schemaVersion = "14"

// newerIndex refuses an index whose schema (found) is newer than this
// build's. Any other version is emptied and rebuilt, which is right for an
// older index but not for a newer one: an older ctxtool left on a machine
// (or run from a stale build) would throw away what the current one built,
// and on PostgreSQL that is every machine's index.
// The callers' errors name the index.
func newerIndex(found string) error {
	n, ok := schemaNumber(found)
	if cur, _ := schemaNumber(schemaVersion); !ok || n <= cur {
		return nil
	}
	return fmt.Errorf("made by a newer ctxtool (index schema %s, this one reads %s), so it is left as it is: upgrade this ctxtool, or give it an index of its own with --index (config recall.url)",
		found, schemaVersion)
}

// schemaNumber is the number a schema version starts with ("14" of
// "14-unredacted").
func schemaNumber(v string) (int, bool) {
	v, _, _ = strings.Cut(v, "-")
	n, err := strconv.Atoi(v)
	return n, err == nil
}

// schemaFor is the version of an index built with or without redaction.
func schemaFor(redact bool) string {
	if redact {
		return schemaVersion
	}
	return schemaVersion + "-unredacted"
}

// DefaultMaxChars caps tool results, tool-call arguments, thinking and bash
// output per message (head and tail kept): 0, none (see extract.go).
const DefaultMaxChars = 0

// Index is an open recall index. It is safe for concurrent use; writes are
// serialised within a process.
type Index struct {
	st       backend
	embedder Embedder
	maxChars int
	// keepSecrets turns redaction off (recall.redact: false).
	keepSecrets bool
	// batchBytes and batchFiles bound one SQLite transaction of IndexFiles.
	batchBytes int64

	wmu sync.Mutex // one writer per process
}

// Option configures Open.
type Option func(*Index)

// WithEmbedder turns on semantic search: new chunks are embedded at index
// time and queries are scored 0.7 × vector + 0.3 × keyword.
func WithEmbedder(e Embedder) Option { return func(ix *Index) { ix.embedder = e } }

// WithMaxChars caps tool output per message (DefaultMaxChars: no cap).
func WithMaxChars(n int) Option {
	return func(ix *Index) {
		if n > 0 {
			ix.maxChars = n
		}
	}
}

// WithRedaction turns the redaction of secrets on (the default) or off.
// Redacted, every credential pkg/secrets finds is indexed as
// [secret:<kind>:<fingerprint>], so a search for the fingerprint lint
// reports finds the lines that held it, and nothing the index returns or
// stores holds the secret.
func WithRedaction(on bool) Option { return func(ix *Index) { ix.keepSecrets = !on } }

// DBPath is where the SQLite index of a state directory lives.
func DBPath(stateDir string) string { return filepath.Join(stateDir, "recall", "index.sqlite") }

// IsURL reports whether location names a PostgreSQL database rather than a
// SQLite file.
func IsURL(location string) bool {
	return strings.HasPrefix(location, "postgres://") || strings.HasPrefix(location, "postgresql://")
}

// Open opens (creating if needed) the SQLite index in
// <stateDir>/recall/index.sqlite.
func Open(stateDir string, opts ...Option) (*Index, error) {
	if stateDir == "" {
		return nil, errors.New("recall: empty state directory (set --state-dir or CTXTOOL_STATE_DIR)")
	}
	return OpenFile(DBPath(stateDir), opts...)
}

// OpenURL opens the index at location: a postgres:// or postgresql:// URL
// for PostgreSQL, otherwise the path of a SQLite file.
func OpenURL(location string, opts ...Option) (*Index, error) {
	if IsURL(location) {
		ix := newIndex(nil, opts)
		st, err := openPostgres(context.Background(), location, schemaFor(!ix.keepSecrets))
		if err != nil {
			return nil, err
		}
		ix.st = st
		return ix, nil
	}
	return OpenFile(location, opts...)
}

// OpenFile opens the SQLite index at an explicit database path.
func OpenFile(dbPath string, opts ...Option) (*Index, error) {
	ix := newIndex(nil, opts)
	st, err := openSQLite(dbPath, schemaFor(!ix.keepSecrets))
	if err != nil {
		return nil, err
	}
	ix.st = st
	return ix, nil
}

func newIndex(st backend, opts []Option) *Index {
	ix := &Index{st: st, maxChars: DefaultMaxChars, batchBytes: 64 << 20}
	for _, o := range opts {
		o(ix)
	}
	return ix
}

// Path is where the index lives: the SQLite file, or the PostgreSQL URL
// without its password.
func (ix *Index) Path() string { return ix.st.location() }

// Emptied says, when opening the index emptied it, why: it was made by an
// earlier ctxtool whose tables this one does not read (every file is then
// indexed again on the next run). "" when the open kept the index.
func (ix *Index) Emptied() string {
	v := ix.st.droppedSchema()
	if v == "" {
		return ""
	}
	return fmt.Sprintf("the recall index at %s was made by an earlier ctxtool (index schema %s, this one reads %s) and was emptied; it is rebuilt from the transcripts as they are indexed again ('ctxtool index PATH...')",
		ix.Path(), v, schemaVersion)
}

// Sizes is the index's size against the sessions it covers.
func (ix *Index) Sizes(ctx context.Context) (Sizes, error) { return ix.st.sizes(ctx) }

// Close closes the database.
func (ix *Index) Close() error { return ix.st.close() }

// Rebuild empties the index (every file is indexed again by the next run).
// For SQLite the file is deleted and created anew, which also recovers from
// a corrupt index; for PostgreSQL the recall tables are dropped and created
// again — every machine's rows, not only this one's.
func Rebuild(location string) error {
	if IsURL(location) {
		st, err := openPostgres(context.Background(), location, schemaVersion)
		if err != nil {
			return err
		}
		defer st.close()
		return st.rebuild(context.Background())
	}
	for _, f := range []string{location, ftsPath(location)} {
		for _, suf := range []string{"", "-wal", "-shm", "-journal"} {
			if err := os.Remove(f + suf); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("recall: remove %s: %w", f+suf, err)
			}
		}
	}
	return nil
}

// StoreError is a failure of the index's storage itself (disk full, I/O
// error, corruption, unreachable database): it names the index and what to
// do. IndexFiles stops at the first one instead of failing every file.
type StoreError struct {
	Index  string // file path or redacted URL
	Err    error
	Remedy string
}

func (e *StoreError) Error() string {
	return fmt.Sprintf("recall index %s: %v (%s)", e.Index, e.Err, e.Remedy)
}

func (e *StoreError) Unwrap() error { return e.Err }

// Remedies named by StoreError.
const (
	remedyFull    = "free space on its device, then run 'ctxtool index' again: nothing indexed so far is lost"
	remedyCorrupt = "the index is damaged: rebuild it with 'ctxtool index --rebuild PATH...'; it is a cache of the transcripts, nothing original is lost"
	remedyIO      = "check the device and the file's permissions, then run again; if the error persists, 'ctxtool index --rebuild PATH...'"
)
