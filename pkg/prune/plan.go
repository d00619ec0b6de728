// Package prune keeps session stores from filling the disk: it decides,
// per agent and project, which old sessions to compress into archives
// (Plan), archives them crash-safely so that every session stays readable
// at every moment (Archive, Apply), restores them byte for byte
// (Unarchive), and deletes archived copies only when asked (Policy.Delete).
//
// Archives are zstd (*.jsonl.zst), which every reading command of ctxtool
// reads through pkg/formats, so an archived session stays searchable.
// Live sessions are never touched: the newest of each project, those
// written within the idle time, those an OpenClaw sessions.json names as
// current, and locked ones.
package prune

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/ctxtool/ctxtool/pkg/filelock"
	"github.com/ctxtool/ctxtool/pkg/formats"
	"github.com/ctxtool/ctxtool/pkg/sessionstore"
	"github.com/ctxtool/ctxtool/pkg/sources"
	"github.com/ctxtool/ctxtool/pkg/walk"
)

// Policy says which sessions are archived and which archives deleted.
type Policy struct {
	// OlderThan archives sessions last written longer ago than this (0: off).
	OlderThan time.Duration
	// KeepLast is how many of the newest sessions of each project are never
	// archived.
	KeepLast int
	// MaxTotal, when > 0, archives further sessions, oldest first, until
	// the bytes of every session found (archives counted at their size) are
	// at most this.
	MaxTotal int64
	// Idle: a session written less than this long ago is live, left alone.
	Idle time.Duration
	// Delete removes the archives ctxtool made more than DeleteAfter ago.
	Delete      bool
	DeleteAfter time.Duration
	// Dedupe moves the inline images of archived pi/OpenClaw sessions to
	// a content-addressed store beside the archives (BlobDir), leaving
	// references; other formats are archived whole.
	Dedupe bool
	// ArchiveDir, when set, receives the archives
	// (<dir>/<agent>/<project>/<name>.zst) instead of the session's own
	// directory.
	ArchiveDir string
}

// Action is what prune does (or did) to one session.
type Action string

const (
	Keep      Action = "keep"
	ToArchive Action = "archive"
	// Archived is an archive ctxtool made earlier (or just now, with --apply).
	Archived Action = "archived"
	ToDelete Action = "delete"
	Deleted  Action = "deleted"
	// Skipped is a session a policy selected but that was left alone
	// (locked, live, appended to meanwhile); Reason says why.
	Skipped Action = "skipped"
	Failed  Action = "error"
)

// Session is one row of the report.
type Session struct {
	File    string         `json:"file"`
	Agent   sources.Agent  `json:"agent"`
	Project string         `json:"project"`
	Format  formats.Format `json:"format"`
	Bytes   int64          `json:"bytes"`
	ModTime time.Time      `json:"mtime"`
	Action  Action         `json:"action"`
	Reason  string         `json:"reason,omitempty"`
	// Archive is where the archive is (or would be written).
	Archive string `json:"archive,omitempty"`
	// Reclaimed is the bytes freed: estimated in a dry run (Estimated).
	Reclaimed int64  `json:"reclaimed,omitempty"`
	Estimated bool   `json:"estimated,omitempty"`
	SHA256    string `json:"sha256,omitempty"`
	// Locked: skipped because another process holds the session lock.
	Locked bool `json:"locked,omitempty"`
	// Done: archived or deleted by this run.
	Done bool `json:"done,omitempty"`
	// Deduped is the image bytes replaced by references in the archive,
	// BlobsAdded what they added to the image store (counted against
	// Reclaimed).
	Deduped    int64 `json:"deduped,omitempty"`
	BlobsAdded int64 `json:"blobsAdded,omitempty"`
	info       *Info
}

// Group sums up the sessions of one agent and project.
type Group struct {
	Agent     sources.Agent `json:"agent"`
	Project   string        `json:"project"`
	Sessions  int           `json:"sessions"`
	Bytes     int64         `json:"bytes"`
	Oldest    time.Time     `json:"oldest"`
	Newest    time.Time     `json:"newest"`
	Archive   int           `json:"archive"`
	Skipped   int           `json:"skipped"`
	Reclaimed int64         `json:"reclaimed"`
}

// Report is a prune run: every session, and the groups.
type Report struct {
	Sessions []*Session `json:"sessions"`
	Groups   []Group    `json:"groups"`
	DryRun   bool       `json:"dryRun"`
	// Recovered lists originals a killed run had moved aside, put back.
	Recovered []string `json:"recovered,omitempty"`
	Totals    Totals   `json:"totals"`
}

// Totals are the report's sums.
type Totals struct {
	Sessions  int   `json:"sessions"`
	Bytes     int64 `json:"bytes"`
	Archive   int   `json:"archive"`
	Delete    int   `json:"delete"`
	Skipped   int   `json:"skipped"`
	Errors    int   `json:"errors"`
	Reclaimed int64 `json:"reclaimed"`
	Locked    int   `json:"locked"`
	// Deduped and BlobsAdded sum the sessions' (with Policy.Dedupe).
	Deduped    int64 `json:"deduped,omitempty"`
	BlobsAdded int64 `json:"blobsAdded,omitempty"`
}

// Plan decides what to do with each file (found by walk.Walk with
// Transcript kind) under policy, at now. It reads only the archives'
// footers, and the first megabytes of the sessions it would archive (to
// estimate what compressing them reclaims).
func Plan(files []walk.File, p Policy, now time.Time) *Report {
	rep := &Report{DryRun: true}
	stores := map[string]*Session{}
	var live []*Session
	for _, f := range files {
		s := &Session{File: f.Path, Format: f.Format, Bytes: f.Size, ModTime: f.ModTime, Action: Keep}
		s.Agent, s.Project = sources.Classify(f.Path)
		if a := f.Format.Agent(); s.Agent == sources.Unknown && a != "" {
			s.Agent = sources.Agent(a)
		}
		switch {
		case f.Format == formats.OpenClawSQLite:
			db, _, _ := formats.SplitStorePath(f.Path)
			if stores[db] != nil {
				continue // one row per database
			}
			s.File, s.Action = db, Skipped
			s.Reason = "OpenClaw's SQLite session store: read-only for ctxtool, not prunable (OpenClaw archives it itself)"
			stores[db] = s
		case f.Kind != walk.Transcript:
			s.Reason = "not a primary transcript"
		case f.Format == formats.Zstd || strings.HasSuffix(f.Path, ".zst"):
			planArchive(s, p, now)
		default:
			live = append(live, s)
		}
		rep.Sessions = append(rep.Sessions, s)
	}
	choose(live, p, now)
	rep.sum()
	return rep
}

// planArchive classifies a compressed file: ours (Archived, or Delete when
// old enough and asked for), or the agent's own (left as it is).
func planArchive(s *Session, p Policy, now time.Time) {
	info, ok, err := ReadInfo(s.File)
	switch {
	case err != nil:
		s.Action, s.Reason = Failed, err.Error()
		return
	case !ok:
		s.Reason = "compressed by its agent (not a ctxtool archive): left as it is"
		return
	}
	s.info, s.Action, s.SHA256, s.Archive = info, Archived, info.SHA256, s.File
	s.ModTime = info.ModTime // the session's age, not the archive's
	s.Reason = "archive of " + info.Original
	if p.Delete {
		if age := now.Sub(info.ArchivedAt); age > p.DeleteAfter {
			s.Action = ToDelete
			s.Reason = fmt.Sprintf("archived %s ago (> --delete-after %s)", FormatAge(age), FormatAge(p.DeleteAfter))
			s.Reclaimed = s.Bytes
		}
	}
}

// choose applies the policies to the uncompressed sessions.
func choose(live []*Session, p Policy, now time.Time) {
	byProject := map[[2]string][]*Session{}
	for _, s := range live {
		k := [2]string{string(s.Agent), s.Project}
		byProject[k] = append(byProject[k], s)
	}
	var eligible []*Session
	for _, group := range byProject {
		sort.SliceStable(group, func(i, j int) bool { return group[i].ModTime.After(group[j].ModTime) })
		for i, s := range group {
			switch {
			case i < p.KeepLast:
				s.Reason = fmt.Sprintf("one of the %d newest of its project (--keep-last)", p.KeepLast)
			case p.Idle > 0 && now.Sub(s.ModTime) < p.Idle:
				s.Reason = fmt.Sprintf("written %s ago (< --idle %s): possibly live", FormatAge(now.Sub(s.ModTime)), FormatAge(p.Idle))
			default:
				if why := current(s.File); why != "" {
					s.Reason = why
					continue
				}
				eligible = append(eligible, s)
			}
		}
	}
	sort.SliceStable(eligible, func(i, j int) bool { return eligible[i].ModTime.Before(eligible[j].ModTime) })
	for _, s := range eligible {
		if p.OlderThan > 0 && now.Sub(s.ModTime) > p.OlderThan {
			s.Action = ToArchive
			s.Reason = fmt.Sprintf("last written %s ago (> --older-than %s)", FormatAge(now.Sub(s.ModTime)), FormatAge(p.OlderThan))
		}
	}
	if p.MaxTotal > 0 {
		var total int64
		for _, s := range live {
			total += s.Bytes
		}
		for _, s := range eligible {
			if s.Action == ToArchive {
				total -= estimate(s, p)
			}
		}
		for _, s := range eligible {
			if total <= p.MaxTotal {
				break
			}
			if s.Action != ToArchive {
				s.Action = ToArchive
				s.Reason = fmt.Sprintf("the sessions take more than --max-total %s; oldest first", FormatBytes(p.MaxTotal))
				total -= estimate(s, p)
			}
		}
	}
	for _, s := range live {
		if s.Action == ToArchive {
			estimate(s, p)
			if lockHeld(s.File) {
				s.Reason += "; locked now (would be skipped if still locked)"
			}
		}
	}
}

// current says why an OpenClaw session is live although idle: its
// sessions.json names it as a key's current transcript ("" otherwise).
func current(path string) string {
	ref, err := sessionstore.Find(path)
	if err != nil || ref == nil {
		return ""
	}
	return "the current session of " + ref.Key + " in " + ref.StorePath
}

func lockHeld(path string) bool {
	_, err := os.Stat(filelock.Path(path))
	return err == nil
}

// Dest is where the archive of a session goes.
func Dest(s *Session, archiveDir string) string {
	if archiveDir == "" {
		return s.File + Suffix
	}
	project := strings.Trim(strings.ReplaceAll(filepath.ToSlash(s.Project), "/", "_"), "._")
	if project == "" {
		project = "_"
	}
	return filepath.Join(archiveDir, string(s.Agent), project, filepath.Base(s.File)+Suffix)
}

// sampleBytes is how much of a session the dry run compresses to estimate
// the ratio of the whole.
const sampleBytes = 4 << 20

// estimate sets (once) s.Archive and the bytes archiving s would reclaim,
// from compressing its first sampleBytes.
func estimate(s *Session, p Policy) int64 {
	if s.Archive == "" {
		s.Archive = Dest(s, p.ArchiveDir)
	}
	if s.Estimated || s.Reclaimed > 0 {
		return s.Reclaimed
	}
	s.Estimated = true
	data, err := readHead(s.File, sampleBytes)
	if err != nil || len(data) == 0 {
		return 0
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedDefault))
	if err != nil {
		return 0
	}
	c := len(enc.EncodeAll(data, nil))
	enc.Close()
	ratio := float64(c) / float64(len(data))
	s.Reclaimed = s.Bytes - int64(ratio*float64(s.Bytes))
	return s.Reclaimed
}

func readHead(path string, n int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, n)
	m, err := f.Read(buf)
	for err == nil && m < n {
		var k int
		k, err = f.Read(buf[m:])
		m += k
	}
	return buf[:m], nil
}

// sum fills the groups and totals from the sessions.
func (r *Report) sum() {
	idx := map[[2]string]int{}
	r.Groups, r.Totals = nil, Totals{}
	for _, s := range r.Sessions {
		k := [2]string{string(s.Agent), s.Project}
		i, ok := idx[k]
		if !ok {
			i = len(r.Groups)
			idx[k] = i
			r.Groups = append(r.Groups, Group{Agent: s.Agent, Project: s.Project, Oldest: s.ModTime, Newest: s.ModTime})
		}
		g := &r.Groups[i]
		g.Sessions++
		g.Bytes += s.Bytes
		if s.ModTime.Before(g.Oldest) {
			g.Oldest = s.ModTime
		}
		if s.ModTime.After(g.Newest) {
			g.Newest = s.ModTime
		}
		r.Totals.Sessions++
		r.Totals.Bytes += s.Bytes
		switch s.Action {
		case ToArchive, ToDelete, Deleted:
			g.Archive++
			g.Reclaimed += s.Reclaimed
			r.Totals.Reclaimed += s.Reclaimed
			if s.Action == ToArchive {
				r.Totals.Archive++
			} else {
				r.Totals.Delete++
			}
		case Archived:
			if s.Done {
				g.Archive++
				g.Reclaimed += s.Reclaimed
				r.Totals.Archive++
				r.Totals.Reclaimed += s.Reclaimed
			}
		case Skipped:
			g.Skipped++
			r.Totals.Skipped++
		case Failed:
			g.Skipped++
			r.Totals.Errors++
		}
		if s.Locked {
			r.Totals.Locked++
		}
		r.Totals.Deduped += s.Deduped
		r.Totals.BlobsAdded += s.BlobsAdded
	}
	sort.SliceStable(r.Groups, func(i, j int) bool {
		if r.Groups[i].Agent != r.Groups[j].Agent {
			return r.Groups[i].Agent < r.Groups[j].Agent
		}
		return r.Groups[i].Project < r.Groups[j].Project
	})
}

// ParseAge reads an age: a Go duration (36h, 90m) or whole days or weeks
// (30d, 2w).
func ParseAge(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "0" {
		return 0, nil
	}
	for suffix, unit := range map[string]time.Duration{"d": 24 * time.Hour, "w": 7 * 24 * time.Hour} {
		if n, ok := strings.CutSuffix(s, suffix); ok {
			v, err := strconv.ParseFloat(n, 64)
			if err != nil || v < 0 {
				break
			}
			return time.Duration(v * float64(unit)), nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not an age: write e.g. 30d, 2w, 36h or 90m", s)
	}
	return d, nil
}

// ParseBytes reads a size: 20GB, 500MB, 1.5GiB, 123 (bytes). Decimal
// units are powers of 1000, binary ones (KiB, MiB, GiB, TiB) of 1024.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "" || t == "0" {
		return 0, nil
	}
	units := []struct {
		suffix string
		mult   float64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
		{"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"kB", 1e3}, {"T", 1e12}, {"G", 1e9}, {"M", 1e6}, {"K", 1e3}, {"B", 1}}
	mult := 1.0
	for _, u := range units {
		if n, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = strings.TrimSpace(n), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 {
		return 0, errors.New(strconv.Quote(s) + " is not a size: write e.g. 20GB, 500MB or 1.5GiB")
	}
	return int64(v * mult), nil
}

// FormatBytes writes a size the way ParseBytes reads it (decimal units).
func FormatBytes(n int64) string {
	switch {
	case n >= 1e9:
		return strconv.FormatFloat(float64(n)/1e9, 'f', 1, 64) + "GB"
	case n >= 1e6:
		return strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64) + "MB"
	case n >= 1e3:
		return strconv.FormatFloat(float64(n)/1e3, 'f', 1, 64) + "kB"
	}
	return strconv.FormatInt(n, 10) + "B"
}

// FormatAge writes an age in the largest whole unit: 30d, 5h, 10m, 3s.
func FormatAge(d time.Duration) string {
	switch {
	case d >= 24*time.Hour:
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	case d >= time.Hour:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d >= time.Minute:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	}
	return strconv.FormatInt(int64(d/time.Second), 10) + "s"
}
