package formats

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

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
// One store holds many sessions; "store.sqlite#<session key or id>" names
// one. A store given without a key must hold exactly one session.

// StoreSession is one session of an OpenClaw store.
type StoreSession struct {
	Key       string
	SessionID string
	Events    int
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
	f, err := openRegular(p)
	if err != nil || f == nil {
		return false
	}
	defer f.Close()
	head := make([]byte, len(sqliteMagic))
	n, _ := f.Read(head)
	return bytes.Equal(head[:n], sqliteMagic)
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
		return nil, fmt.Errorf("%s: %v", path, err)
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
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	defer rows.Close()
	var out []StoreSession
	for rows.Next() {
		var s StoreSession
		var sid sql.NullString
		if err := rows.Scan(&s.Key, &sid, &s.Events); err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		s.SessionID = sid.String
		out = append(out, s)
	}
	return out, rows.Err()
}

func openStore(dbPath, key, name string) (*View, error) {
	db, err := openDB(dbPath)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", dbPath, err)
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
				dbPath, what, shellQuote(StorePath(dbPath, sessions[0].Key)), strings.Join(keys, ", "))
		}
	}
	if name == dbPath {
		name = StorePath(dbPath, sess.Key)
	}
	v, err := readSession(db, sess, name)
	if err != nil {
		return nil, err
	}
	v.Format = OpenClawSQLite
	return v, nil
}

func readSession(db *sql.DB, sess *StoreSession, name string) (*View, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rows, err := db.QueryContext(ctx, `SELECT seq, event_json, event_zstd FROM transcript_events
		WHERE session_id = ? ORDER BY seq`, sess.SessionID)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	defer rows.Close()
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	defer dec.Close()
	v := &view{out: &spool{}}
	fail := func(err error) (*View, error) {
		v.out.Close()
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	first := true
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
				return fail(fmt.Errorf("seq %d: event_zstd: %v", seq, err))
			}
			line = buf
		}
		if first {
			first = false
			if f, _, ok := classifyLine(line); !ok || f != Pi || !bytes.Contains(line, []byte(`"session"`)) {
				// A header-less import: give the view the header pi needs.
				v.sessionID = sess.SessionID
				v.headerRow = seq
				if err := v.header(seq); err != nil {
					return fail(err)
				}
			}
		}
		v.w.b = append(v.w.b, line...)
		if err := v.put(seq); err != nil {
			return fail(err)
		}
	}
	if err := rows.Err(); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fail(fmt.Errorf("reading the store timed out"))
		}
		return fail(err)
	}
	if err := v.out.finish(); err != nil {
		return fail(err)
	}
	v.headerDone = true
	return &View{Format: OpenClawSQLite, File: name, Unit: "seq", data: v.out, rows: v.rows}, nil
}
