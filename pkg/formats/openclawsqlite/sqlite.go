// Package openclawsqlite reads OpenClaw's SQLite session store (≥ 2026.8)
// as pi v3 views, one session at a time, and lists its sessions. It is a
// format of pkg/formats that is no JSONL converter (the store holds pi
// lines already): formats opens it for a store file or a
// "store.sqlite#<key>" path, and names its API (ListStore, StorePath,
// SplitStorePath, StoreSession) for formats' callers.
package openclawsqlite

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ctxtool/ctxtool/pkg/formats/internal/conv"
	"github.com/klauspost/compress/zstd"
	_ "modernc.org/sqlite" // the driver the recall index uses too
)

// OpenClaw ≥ 2026.8 keeps sessions in a per-agent SQLite database,
// ~/.openclaw/agents/<agentId>/agent/openclaw-agent.sqlite (agent schema 23;
// ../shared/docs/openclaw-sqlite.md has what was measured):
//
//   - session_nodes(session_key → current_session_id) names the sessions;
//     transcript_events(session_id, seq, event_json | event_zstd) holds the
//     session's JSONL lines in order, seq 0 being the session header. Each
//     decoded row is byte-identical to the line OpenClaw imported, so the
//     view is those lines, cited by seq, and pi's own rules apply.
//   - event_zstd is one standard zstd frame per event.
//   - The Gateway owns the database: it is opened read-only (mode=ro, no
//     create, no migration, query_only), and a busy database is retried for
//     a few seconds (SQLITE_BUSY while the Gateway checkpoints its WAL).
//
//   - Cold storage (agent schema 20) moves an idle session's rows out of
//     transcript_events into a zstd archive, recorded in
//     session_transcript_cold_archives: a file in the agent's sessions/cold/
//     directory (storage "file"), or the row's own archive_blob in a backup's
//     private copy (storage "sqlite"). The store alone then looks like an
//     empty transcript, so a cold session is read from its archive (checked
//     against the recorded size and SHA-256, as OpenClaw does) followed by
//     any rows after the archive's last seq.
//
// One store holds many sessions; "store.sqlite#<session key or id>" names
// one. A store given without a key must hold exactly one session.

// StoreSession is one session of an OpenClaw store.
type StoreSession struct {
	Key       string
	SessionID string
	// Events counts the session's rows, the cold archive's included.
	Events int
	// ColdArchive is the file holding the session's cold history ("" when
	// the session is not cold or a backup keeps the archive inside the
	// database): a directory walk reads it through the store, not twice.
	ColdArchive string
	cold        *coldRef
}

// coldRef is a session's row of session_transcript_cold_archives.
type coldRef struct {
	name    string
	sha256  string
	bytes   int64
	events  int
	lastSeq int
	inDB    bool // storage "sqlite": the archive is the row's archive_blob
}

// StorePath is the virtual path of one session of a store.
func StorePath(db, key string) string { return db + "#" + key }

// SplitStorePath splits "store.sqlite#key" when the part before the last
// '#' is an existing SQLite file.
func SplitStorePath(p string) (db, key string, ok bool) {
	i := strings.LastIndexByte(p, '#')
	if i <= 0 {
		return "", "", false
	}
	db, key = p[:i], p[i+1:]
	if !isSQLiteFile(db) {
		return "", "", false
	}
	return db, key, true
}

func isSQLiteFile(p string) bool {
	f, err := conv.OpenRegular(p)
	if err != nil || f == nil {
		return false
	}
	defer f.Close()
	head := make([]byte, len(Magic))
	n, _ := f.Read(head)
	return bytes.Equal(head[:n], Magic)
}

// openDB opens an OpenClaw store read-only: it never creates, migrates or
// writes it.
func openDB(path string) (*sql.DB, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	q := url.Values{}
	q.Set("mode", "ro")
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "query_only(1)")
	u := url.URL{Scheme: "file", Opaque: (&url.URL{Path: path}).EscapedPath(), RawQuery: q.Encode()}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// ListStore lists the sessions of an OpenClaw store.
func ListStore(path string) ([]StoreSession, error) {
	db, err := openDB(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer db.Close()
	return listStore(db, path)
}

func listStore(db *sql.DB, path string) ([]StoreSession, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rows, err := db.QueryContext(ctx, `SELECT n.session_key, n.current_session_id,
		(SELECT count(*) FROM transcript_events e WHERE e.session_id = n.current_session_id)
		FROM session_nodes n ORDER BY n.session_key`)
	if err != nil {
		if strings.Contains(err.Error(), "no such table") {
			return nil, fmt.Errorf("%s: an SQLite database without OpenClaw's session tables (session_nodes, transcript_events): not an OpenClaw session store", path)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer rows.Close()
	var out []StoreSession
	for rows.Next() {
		var s StoreSession
		var sid sql.NullString
		if err := rows.Scan(&s.Key, &sid, &s.Events); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		s.SessionID = sid.String
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := addColdArchives(ctx, db, path, out); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// addColdArchives marks the sessions that cold storage has archived. Stores
// older than agent schema 20 have no such table.
func addColdArchives(ctx context.Context, db *sql.DB, path string, sessions []StoreSession) error {
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master
		WHERE type = 'table' AND name = 'session_transcript_cold_archives'`).Scan(&n); err != nil || n == 0 {
		return err
	}
	rows, err := db.QueryContext(ctx, `SELECT session_id, archive_name, archive_sha256, archive_bytes,
		event_count, last_seq, storage FROM session_transcript_cold_archives`)
	if err != nil {
		return err
	}
	defer rows.Close()
	cold := map[string]*coldRef{}
	for rows.Next() {
		var sid, storage string
		var c coldRef
		if err := rows.Scan(&sid, &c.name, &c.sha256, &c.bytes, &c.events, &c.lastSeq, &storage); err != nil {
			return err
		}
		c.inDB = storage == "sqlite"
		cold[sid] = &c
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for i := range sessions {
		s := &sessions[i]
		if c := cold[s.SessionID]; c != nil {
			s.cold = c
			s.Events += c.events
			if !c.inDB {
				s.ColdArchive = coldArchivePath(path, c.name)
			}
		}
	}
	return nil
}

// coldArchivePath is where OpenClaw keeps a cold archive: the sessions/cold/
// directory of the agent whose agent/ directory holds the store.
func coldArchivePath(dbPath, name string) string {
	return filepath.Join(filepath.Dir(filepath.Dir(dbPath)), "sessions", "cold", name)
}

// coldArchiveBytes is a cold session's compressed archive, checked against
// the size and SHA-256 its row records: OpenClaw, too, refuses to read an
// archive that is missing or does not match rather than show a shorter
// history.
func coldArchiveBytes(ctx context.Context, db *sql.DB, s *StoreSession) ([]byte, error) {
	c := s.cold
	var data []byte
	where := "its archive " + s.ColdArchive
	if c.inDB {
		where = "the archive kept in the database"
		if err := db.QueryRowContext(ctx, `SELECT archive_blob FROM session_transcript_cold_archives
			WHERE session_id = ?`, s.SessionID).Scan(&data); err != nil {
			return nil, err
		}
	} else {
		var err error
		if data, err = os.ReadFile(s.ColdArchive); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("session %s is in OpenClaw's cold storage and %s is missing: restore that file from a backup (OpenClaw cannot read this transcript either)", s.Key, where)
			}
			return nil, err
		}
	}
	sum := sha256.Sum256(data)
	if int64(len(data)) != c.bytes || hex.EncodeToString(sum[:]) != c.sha256 {
		return nil, fmt.Errorf("session %s is in OpenClaw's cold storage and %s does not match the size and SHA-256 the store records (%d bytes, %s): restore it from a backup (OpenClaw refuses it too)", s.Key, where, c.bytes, c.sha256)
	}
	return data, nil
}

// Open reads one session of the store at dbPath (key "": the only
// one) as the view name cites. isHeader reports whether a line is a pi
// session header (the store holds imported JSONL lines; a header-less
// import is given one).
func Open(dbPath, key, name string, isHeader func(line []byte) bool) (*conv.View, error) {
	db, err := openDB(dbPath)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dbPath, err)
	}
	defer db.Close()
	sessions, err := listStore(db, dbPath)
	if err != nil {
		return nil, err
	}
	var sess *StoreSession
	for i := range sessions {
		if s := &sessions[i]; key != "" && (s.Key == key || s.SessionID == key) {
			sess = s
			break
		}
	}
	if sess == nil {
		switch {
		case key == "" && len(sessions) == 1:
			sess = &sessions[0]
		case len(sessions) == 0:
			return nil, fmt.Errorf("%s: the OpenClaw store holds no sessions", dbPath)
		default:
			var keys []string
			for i, s := range sessions {
				if i == 10 {
					keys = append(keys, fmt.Sprintf("… %d more", len(sessions)-10))
					break
				}
				keys = append(keys, s.Key)
			}
			what := "holds several sessions"
			if key != "" {
				what = fmt.Sprintf("has no session %q", key)
			}
			return nil, fmt.Errorf("%s: the OpenClaw store %s; name one as %s (sessions: %s), or give a directory to walk them all",
				dbPath, what, conv.ShellQuote(StorePath(dbPath, sessions[0].Key)), strings.Join(keys, ", "))
		}
	}
	if name == dbPath {
		name = StorePath(dbPath, sess.Key)
	}
	v, err := readSession(db, sess, name, isHeader)
	if err != nil {
		return nil, err
	}
	v.Format = conv.OpenClawSQLite
	return v, nil
}

func readSession(db *sql.DB, sess *StoreSession, name string, isHeader func([]byte) bool) (*conv.View, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	defer dec.Close()
	r := &storeReader{v: &conv.Emitter{Out: &conv.Spool{}}, sess: sess, isHeader: isHeader}
	fail := func(err error) (*conv.View, error) {
		r.v.Out.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	after := -1
	if sess.cold != nil {
		if err := r.readCold(ctx, db); err != nil {
			return fail(err)
		}
		after = sess.cold.lastSeq
	}
	rows, err := db.QueryContext(ctx, `SELECT seq, event_json, event_zstd FROM transcript_events
		WHERE session_id = ? AND seq > ? ORDER BY seq`, sess.SessionID, after)
	if err != nil {
		return fail(err)
	}
	defer rows.Close()
	var buf []byte
	for rows.Next() {
		var seq int
		var js sql.NullString
		var z []byte
		if err := rows.Scan(&seq, &js, &z); err != nil {
			return fail(err)
		}
		line := []byte(js.String)
		if !js.Valid {
			if buf, err = dec.DecodeAll(z, buf[:0]); err != nil {
				return fail(fmt.Errorf("seq %d: event_zstd: %w", seq, err))
			}
			line = buf
		}
		if err := r.event(seq, line); err != nil {
			return fail(err)
		}
	}
	if err := rows.Err(); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fail(fmt.Errorf("reading the store timed out"))
		}
		return fail(err)
	}
	if err := r.v.FinishOut(); err != nil {
		return fail(err)
	}
	r.v.HeaderDone = true
	return conv.NewView(conv.OpenClawSQLite, name, "seq", nil, r.v), nil
}

// storeReader spools one store session's events, in seq order, as the
// view's lines.
type storeReader struct {
	v        *conv.Emitter
	sess     *StoreSession
	isHeader func([]byte) bool
}

func (r *storeReader) event(seq int, line []byte) error {
	if len(r.v.Rows) == 0 { // the session's first event
		if !r.isHeader(line) {
			// A header-less import: give the view the header pi needs.
			r.v.SessionID = r.sess.SessionID
			r.v.HeaderRow = seq
			if err := r.v.Header(seq); err != nil {
				return err
			}
		}
	}
	r.v.W.B = append(r.v.W.B, line...)
	return r.v.Put(seq)
}

// readCold spools the events of the session's cold archive, decompressed
// as a stream (OpenClaw keeps archives up to 64 MiB of JSONL).
func (r *storeReader) readCold(ctx context.Context, db *sql.DB) error {
	data, err := coldArchiveBytes(ctx, db, r.sess)
	if err != nil {
		return err
	}
	dec, err := zstd.NewReader(bytes.NewReader(data), zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
	if err != nil {
		return err
	}
	defer dec.Close()
	lr := conv.NewLineReader(dec)
	for no := 1; ; no++ {
		line, err := lr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("cold archive of session %s: zstd: %w", r.sess.Key, err)
		}
		seq, ev, ok, err := ColdRecord(line)
		if err != nil {
			return fmt.Errorf("cold archive of session %s: line %d: %w", r.sess.Key, no, err)
		}
		if ok {
			if err := r.event(seq, ev); err != nil {
				return err
			}
		}
	}
}

// Magic starts an SQLite database file.
var Magic = []byte("SQLite format 3\x00")

// ColdRecord decodes one cold-archive record: ok when it is an event, with
// its seq and original line.
func ColdRecord(l []byte) (seq int, event []byte, ok bool, err error) {
	var rec struct {
		Kind string `json:"kind"`
		Row  struct {
			Seq       int    `json:"seq"`
			EventJSON string `json:"event_json"`
		} `json:"row"`
	}
	if err := json.Unmarshal(l, &rec); err != nil {
		return 0, nil, false, err
	}
	if rec.Kind != "event" {
		return 0, nil, false, nil
	}
	return rec.Row.Seq, []byte(rec.Row.EventJSON), true, nil
}
