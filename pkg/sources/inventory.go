package sources

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ctxtool/ctxtool/pkg/formats"
	"github.com/ctxtool/ctxtool/pkg/walk"
)

// Gemini CLI and opencode keep their sessions in layouts ctxtool does not
// read; Inventory lists them so that nothing is skipped in silence.
const (
	Gemini   Agent = "gemini-cli"
	OpenCode Agent = "opencode"
)

// Unreadable is a group of files in a store that ctxtool cannot read.
type Unreadable struct {
	// Path is one file or directory of the group (the first).
	Path  string `json:"path"`
	Files int    `json:"files"`
	Bytes int64  `json:"bytes"`
	Why   string `json:"why"`
}

// StoreSummary is what Inventory found in one store.
type StoreSummary struct {
	Agent Agent  `json:"agent"`
	Path  string `json:"path"`
	// Kind: "sessions directory", "SQLite store", "thread history", "chats".
	Kind string `json:"kind"`
	// Sessions ctxtool reads, their bytes on disk (a database counted
	// once) and the newest modification time.
	Sessions int       `json:"sessions"`
	Bytes    int64     `json:"bytes"`
	Newest   time.Time `json:"newest,omitempty"`
	// Formats counts the sessions by format (pi, zstd, claude-code, …).
	Formats map[string]int `json:"formats,omitempty"`
	// Unreadable is what ctxtool cannot read here, and why.
	Unreadable []Unreadable `json:"unreadable,omitempty"`
	// Skipped is what the walk passed over that is no session (backups,
	// locks, …), by reason.
	Skipped map[string]int `json:"skipped,omitempty"`
}

// Inventory lists every agent's session store under home: the stores Find
// knows (pi, OpenClaw JSONL and SQLite, Claude Code, Codex plain and
// .zst), Codex's thread-history databases, and Gemini CLI's and
// opencode's stores when present. It reads directory entries and each
// session's first bytes (to tell its format), never a whole session.
func Inventory(home string) []StoreSummary {
	var out []StoreSummary
	for _, st := range Find(home) {
		if fi, err := os.Stat(st.Dir); err == nil && fi.IsDir() {
			out = append(out, summarize(st.Agent, st.Dir, "sessions directory"))
		}
		if st.Database != "" {
			out = append(out, summarize(st.Agent, st.Database, "SQLite store"))
		}
	}
	hist, _ := filepath.Glob(filepath.Join(home, ".codex", "thread_history*.sqlite"))
	for _, h := range hist {
		s := StoreSummary{Agent: Codex, Path: h, Kind: "thread history"}
		if fi, err := os.Stat(h); err == nil {
			s.Unreadable = []Unreadable{{Path: h, Files: 1, Bytes: fi.Size(),
				Why: "Codex's paginated history database: ctxtool reads the same threads from the rollouts in ~/.codex/sessions"}}
			s.Newest = fi.ModTime()
		}
		out = append(out, s)
	}
	if s, ok := foreignStore(Gemini, filepath.Join(home, ".gemini", "tmp"), "chats",
		func(p string) bool {
			return strings.Contains(filepath.ToSlash(p), "/chats/") && strings.HasSuffix(p, ".json")
		},
		"Gemini CLI chats (JSON checkpoints, not a JSONL transcript): ctxtool does not read them yet"); ok {
		out = append(out, s)
	}
	if s, ok := foreignStore(OpenCode, filepath.Join(home, ".local", "share", "opencode"), "sessions directory",
		func(p string) bool {
			return strings.HasSuffix(p, ".db") || strings.Contains(filepath.ToSlash(p), "/storage/session/") && strings.HasSuffix(p, ".json")
		},
		"opencode sessions (JSON parts / SQLite): ctxtool does not read them yet"); ok {
		out = append(out, s)
	}
	return out
}

// summarize walks one store: the sessions ctxtool reads, what it cannot
// read (files whose first line no reader knows) and what it skipped.
func summarize(agent Agent, path, kind string) StoreSummary {
	s := StoreSummary{Agent: agent, Path: path, Kind: kind, Formats: map[string]int{}}
	sk := &walk.Skipped{}
	files, err := walk.Walk([]string{path}, walk.Options{Kinds: []walk.Kind{walk.Transcript, walk.Archive}, Skipped: sk})
	if err != nil {
		s.Unreadable = append(s.Unreadable, Unreadable{Path: path, Why: err.Error()})
		return s
	}
	seenDB := map[string]bool{}
	unknown := map[string]*Unreadable{}
	for _, f := range files {
		size := f.Size
		if db, _, ok := formats.SplitStorePath(f.Path); ok {
			if seenDB[db] {
				size = 0
			}
			seenDB[db] = true
		} else if sn, err := formats.SniffFile(f.Path); err == nil && sn.Format == formats.Unknown {
			why := "line " + strconv.Itoa(sn.Line) + " looks like " + sn.Looks + ": no ctxtool reader knows it"
			u := unknown[why]
			if u == nil {
				u = &Unreadable{Path: f.Path, Why: why}
				unknown[why] = u
			}
			u.Files++
			u.Bytes += f.Size
			continue
		}
		s.Sessions++
		s.Bytes += size
		s.Formats[string(f.Format)]++
		if f.ModTime.After(s.Newest) {
			s.Newest = f.ModTime
		}
	}
	for _, u := range unknown {
		s.Unreadable = append(s.Unreadable, *u)
	}
	sort.Slice(s.Unreadable, func(i, j int) bool { return s.Unreadable[i].Path < s.Unreadable[j].Path })
	if sk.Total() > 0 {
		s.Skipped = sk.Counts()
	}
	return s
}

// foreignStore summarises a store of an agent ctxtool does not read: its
// session files are all unreadable, for the reason given.
func foreignStore(agent Agent, dir, kind string, isSession func(string) bool, why string) (StoreSummary, bool) {
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return StoreSummary{}, false
	}
	s := StoreSummary{Agent: agent, Path: dir, Kind: kind}
	u := Unreadable{Why: why}
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !isSession(p) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if u.Path == "" {
			u.Path = p
		}
		u.Files++
		u.Bytes += info.Size()
		if info.ModTime().After(s.Newest) {
			s.Newest = info.ModTime()
		}
		return nil
	})
	if u.Files > 0 {
		s.Unreadable = []Unreadable{u}
	}
	return s, true
}
