// Package walk finds session transcripts under directories and classifies
// file names the way OpenClaw does (docs/design/pi-baseline.md), so that batch
// commands (roll, index) process the same files OpenClaw treats as live
// transcripts and never parse locks, backups, archives or temp files.
//
// Both layouts are covered by one recursive walk: pi keeps sessions in
// <agentDir>/sessions/--<cwd>--/*.jsonl, OpenClaw in
// <stateDir>/agents/<agentId>/sessions/*.jsonl. The same walk finds the
// other agents' homes: Claude Code's ~/.claude/projects/<dir>/<uuid>.jsonl
// (and <uuid>/subagents/*.jsonl), Codex's
// ~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl, *.jsonl.zst files
// (OpenClaw's sessions/cold/ archives among them) and OpenClaw's session
// database ~/.openclaw/agents/<id>/agent/*.sqlite, which is expanded into
// one "store.sqlite#<session key>" path per session. Each file carries its
// format, so writers can leave the read-only ones alone.
//
// It reads at most a file's first bytes (to tell its format) and never
// writes.
package walk

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/ctxtool/ctxtool/pkg/formats"
	"github.com/ctxtool/ctxtool/pkg/internal/lazyre"
	"github.com/ctxtool/ctxtool/pkg/safefile"
)

// Kind is what a file in a sessions directory is.
type Kind int

const (
	// Other is anything that is not a .jsonl transcript (READMEs, …).
	Other Kind = iota
	// Transcript is a primary session transcript: <id>.jsonl,
	// <id>-topic-<t>.jsonl, pi's <ts>_<uuid>.jsonl. The only kind batch
	// commands write to.
	Transcript
	// Archive is a transcript archived by /new, /reset or deletion
	// (*.jsonl.reset.<stamp>, *.jsonl.deleted.<stamp>): read-only history
	// that memory search still indexes.
	Archive
	// Backup is *.jsonl.bak.<stamp> (ctxtool --truncate, OpenClaw) or
	// sessions.json.bak.N.
	Backup
	// Checkpoint is OpenClaw's pre-compaction copy <id>.checkpoint.<uuid>.jsonl.
	Checkpoint
	// Trajectory is *.trajectory.jsonl / *.trajectory-path.json.
	Trajectory
	// Store is OpenClaw's sessions.json.
	Store
	// Lock is a session write lock (<transcript>.lock).
	Lock
	// Temp is a rewrite in progress (*.truncate-tmp, ctxtool's temp files).
	Temp
	// Database is OpenClaw's per-agent session store (agent/*.sqlite); Walk
	// returns its sessions as Transcript files.
	Database
)

var kindNames = map[Kind]string{
	Other: "not a transcript", Transcript: "transcript", Archive: "archived transcript",
	Backup: "backup", Checkpoint: "checkpoint copy", Trajectory: "trajectory",
	Store: "session store", Lock: "lock file", Temp: "temporary file", Database: "session database",
}

func (k Kind) String() string { return kindNames[k] }

// archiveStamp is OpenClaw's archive suffix: ISO-8601 UTC with ':' → '-'.
var archiveStamp = lazyre.New(`^\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(\.\d{3})?Z$`)

var checkpointName = lazyre.New(`\.checkpoint\.[0-9a-fA-F-]{8,}\.jsonl$`)

// classify names the kind of a session-directory file from its name alone.
func classify(name string) Kind {
	base := filepath.Base(name)
	// OpenClaw takes the last ".<reason>." occurrence and requires the rest
	// to be exactly a stamp.
	best, bestAt := "", -1
	for _, r := range []string{"reset", "deleted", "bak"} {
		if i := strings.LastIndex(base, "."+r+"."); i > bestAt {
			best, bestAt = r, i
		}
	}
	if bestAt >= 0 && archiveStamp().MatchString(base[bestAt+len(best)+2:]) {
		if best == "bak" {
			return Backup
		}
		if strings.HasSuffix(base[:bestAt], ".jsonl") {
			return Archive
		}
		return Other
	}
	switch {
	case base == "sessions.json":
		return Store
	case strings.HasPrefix(base, "sessions.json.bak."):
		return Backup
	case strings.HasSuffix(base, ".lock"):
		return Lock
	case strings.HasSuffix(base, ".truncate-tmp"), strings.Contains(base, ".ctxtool-tmp-"):
		return Temp
	case strings.Contains(base, ".bak."):
		return Backup
	case strings.HasSuffix(base, ".trajectory.jsonl"), strings.HasSuffix(base, ".trajectory-path.json"):
		return Trajectory
	case checkpointName().MatchString(base):
		return Checkpoint
	case strings.HasPrefix(base, "."):
		return Other // editor swap files, ctxtool temp files
	case strings.HasSuffix(base, ".jsonl"):
		return Transcript
	case strings.HasSuffix(base, ".jsonl.zst"):
		if filepath.Base(filepath.Dir(name)) == "cold" {
			return Archive // OpenClaw's cold storage: read-only history
		}
		return Transcript
	case strings.HasSuffix(base, ".sqlite") && filepath.Base(filepath.Dir(name)) == "agent":
		return Database
	}
	return Other
}

// File is one file found by Walk.
type File struct {
	Path    string
	Kind    Kind
	Size    int64
	ModTime time.Time
	// Explicit is true when the file was named on the command line rather
	// than found in a directory.
	Explicit bool
	// Format is what the file holds (sniffed from its first line).
	Format formats.Format
	// coldArchive is the cold-archive file a store session reads.
	coldArchive string
}

// Options select what Walk returns.
type Options struct {
	// Kinds to return from directories; nil = Transcript only.
	Kinds []Kind
	// Missing, when set, is told about each path that does not exist and
	// the walk goes on with the others (cron lines list ~/.openclaw and
	// ~/.pi on machines that have one of them); nil makes it an error.
	Missing func(path string)
	// Writable drops files found in directories that ctxtool does not write
	// (Claude Code, Codex, zstd, OpenClaw stores): for batch writers.
	Writable bool
	// Stdin accepts "-" as standard input (for commands that only read;
	// docs/cli.md: FILE may be "-").
	Stdin bool
	// Skipped, when set, counts what the directory walks passed over, by
	// reason, so that a command can end by saying so (nothing skipped in
	// silence).
	Skipped *Skipped
}

// Skipped counts what directory walks passed over, by reason ("backup",
// "hidden directory", "read-only format", …).
type Skipped struct {
	counts map[string]int
}

func (s *Skipped) add(why string) {
	if s == nil {
		return
	}
	if s.counts == nil {
		s.counts = map[string]int{}
	}
	s.counts[why]++
}

// Total is the number of things skipped.
func (s *Skipped) Total() int {
	n := 0
	if s != nil {
		for _, k := range s.counts {
			n += k
		}
	}
	return n
}

// Counts returns the counts by reason (a copy).
func (s *Skipped) Counts() map[string]int {
	out := map[string]int{}
	if s != nil {
		for k, v := range s.counts {
			out[k] = v
		}
	}
	return out
}

// String is "3 backups, 1 hidden directory" (reasons sorted), "" when
// nothing was skipped.
func (s *Skipped) String() string {
	if s.Total() == 0 {
		return ""
	}
	keys := make([]string, 0, len(s.counts))
	for k := range s.counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d %s", s.counts[k], k)
	}
	return strings.Join(parts, ", ")
}

func (o Options) wants(k Kind) bool {
	if len(o.Kinds) == 0 {
		return k == Transcript
	}
	for _, w := range o.Kinds {
		if w == k {
			return true
		}
	}
	return false
}

// Walk expands paths into session files: a file argument is returned as is
// (whatever its name, except a lock or temp file, which is an error: the
// user named something that is never a transcript), a directory is searched
// recursively for the kinds in opts, skipping hidden directories. The result
// is sorted by path and free of duplicates.
func Walk(paths []string, opts Options) ([]File, error) {
	var set fileSet
	for _, root := range paths {
		files, err := expand(root, opts)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			set.add(f)
		}
	}
	out := set.withoutCovered()
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// fileSet keeps files in the order added, once per absolute path.
type fileSet struct {
	seen  map[string]bool
	files []File
}

// withoutCovered drops the cold archives found in directories that a store
// session in the set already reads (its cold history): one history, listed
// once. An archive named on the command line stays.
func (s *fileSet) withoutCovered() []File {
	covered := map[string]bool{}
	for _, f := range s.files {
		if f.coldArchive != "" {
			covered[absPath(f.coldArchive)] = true
		}
	}
	if len(covered) == 0 {
		return s.files
	}
	var out []File
	for _, f := range s.files {
		if f.Explicit || !covered[absPath(f.Path)] {
			out = append(out, f)
		}
	}
	return out
}

func absPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

func (s *fileSet) add(f File) {
	key := absPath(f.Path)
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	if !s.seen[key] {
		s.seen[key] = true
		s.files = append(s.files, f)
	}
}

// expand is the session files one path argument names.
func expand(root string, opts Options) ([]File, error) {
	if root == "-" && opts.Stdin {
		return []File{{Path: "-", Kind: Transcript, Explicit: true}}, nil
	}
	if db, _, ok := formats.SplitStorePath(root); ok {
		// One session of an OpenClaw store: "store.sqlite#<key>".
		if st, err := os.Stat(db); err == nil {
			return []File{{Path: root, Kind: Transcript, Size: st.Size(), ModTime: st.ModTime(), Explicit: true, Format: formats.OpenClawSQLite}}, nil
		}
	}
	st, err := os.Stat(root)
	if errors.Is(err, fs.ErrNotExist) && opts.Missing != nil {
		opts.Missing(root)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w (give a session .jsonl file or a sessions directory)", root, safefile.PathCause(err))
	}
	if !st.IsDir() {
		return expandFile(root, st)
	}
	return walkDir(root, opts)
}

// expandFile is a file argument: the file itself, or the sessions of an
// OpenClaw store.
func expandFile(root string, st fs.FileInfo) ([]File, error) {
	if err := safefile.CheckRegular(root, st); err != nil {
		return nil, err
	}
	k := classify(root)
	if k == Lock || k == Temp || k == Store {
		return nil, fmt.Errorf("%s: this is a %s, not a session transcript (give the .jsonl file)", root, k)
	}
	f := File{Path: root, Kind: k, Size: st.Size(), ModTime: st.ModTime(), Explicit: true, Format: sniff(root)}
	if f.Format == formats.OpenClawSQLite {
		return storeSessions(f)
	}
	return []File{f}, nil
}

// walkDir searches the directory root for the files opts wants, skipping
// hidden and unreadable subdirectories.
func walkDir(root string, opts Options) ([]File, error) {
	var found []File
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return err
			}
			opts.Skipped.add("unreadable directory")
			return nil // unreadable subdirectory: skip it, keep walking
		}
		if d.IsDir() {
			if p != root && strings.HasPrefix(d.Name(), ".") {
				opts.Skipped.add("hidden directory")
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			found = append(found, entryFiles(p, d, opts)...)
		} else {
			opts.Skipped.add("non-regular file (symlink, FIFO, device)")
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", root, safefile.PathCause(err))
	}
	return found, nil
}

// entryFiles is what the regular file p found in a directory contributes:
// itself, the sessions of an OpenClaw store, or nothing.
func entryFiles(p string, d fs.DirEntry, opts Options) []File {
	k := classify(p)
	if k == Database && opts.wants(Transcript) && !opts.Writable {
		info, err := d.Info()
		if err != nil {
			return nil
		}
		sessions, err := storeSessions(File{Path: p, Size: info.Size(), ModTime: info.ModTime()})
		if err != nil {
			opts.Skipped.add("database that is no OpenClaw store")
		}
		return sessions
	}
	if !opts.wants(k) {
		if k == Database {
			opts.Skipped.add("OpenClaw store (read-only)")
		} else {
			opts.Skipped.add(k.String())
		}
		return nil
	}
	info, err := d.Info()
	if err != nil {
		return nil // vanished while walking
	}
	f := File{Path: p, Kind: k, Size: info.Size(), ModTime: info.ModTime(), Format: sniff(p)}
	if opts.Writable && !f.Format.Writable() {
		opts.Skipped.add(f.Format.String() + " (read-only)")
		return nil
	}
	return []File{f}
}

// sniff names a file's format; unreadable files count as pi (the reader
// reports them).
func sniff(p string) formats.Format {
	sn, err := formats.SniffFile(p)
	if err != nil || sn.Format == formats.Unknown {
		return formats.Pi
	}
	return sn.Format
}

// storeSessions lists the sessions of an OpenClaw store as files.
func storeSessions(db File) ([]File, error) {
	sessions, err := formats.ListStore(db.Path)
	if err != nil {
		return nil, err
	}
	var out []File
	for _, s := range sessions {
		out = append(out, File{Path: formats.StorePath(db.Path, s.Key), Kind: Transcript, Size: db.Size,
			ModTime: db.ModTime, Explicit: db.Explicit, Format: formats.OpenClawSQLite, coldArchive: s.ColdArchive})
	}
	return out, nil
}

// Key is the name a file is known by across runs (baselines compare runs
// made from different working copies): relative to the working directory
// when the file lies below it, with forward slashes; "-" stays "-".
func Key(path string) string {
	if path == "-" {
		return path
	}
	p := path
	if filepath.IsAbs(p) {
		if wd, err := os.Getwd(); err == nil {
			if rel, err := filepath.Rel(wd, p); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				p = rel
			}
		}
	}
	return filepath.ToSlash(filepath.Clean(p))
}
