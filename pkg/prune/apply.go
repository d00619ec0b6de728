package prune

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ctxtool/ctxtool/pkg/formats"
	"github.com/ctxtool/ctxtool/pkg/safefile"
)

// ApplyOptions control Apply.
type ApplyOptions struct {
	Archive ArchiveOptions
	// BeforeDelete is called with each archive about to be deleted, its
	// sha256 verified (the command prints it); nil: nothing is told.
	BeforeDelete func(s *Session)
	// Progress is told after each session acted on.
	Progress func(done, total int)
}

// Apply carries out a plan: archives the sessions marked ToArchive and
// deletes the archives marked ToDelete, updating each row with what
// happened, then rewrites the manifest of every directory that holds,
// received or lost an archive. It stops early when ctx is cancelled (the
// rows not reached are Skipped, "not reached").
func Apply(ctx context.Context, rep *Report, p Policy, opts ApplyOptions) error {
	rep.DryRun = false
	total := 0
	for _, s := range rep.Sessions {
		if s.Action == ToArchive || s.Action == ToDelete {
			total++
		}
	}
	// Every directory holding an archive gets its manifest rebuilt (one a
	// killed run left stale included), and what killed runs left in the
	// directories is swept.
	dirs := map[string]bool{}
	for _, s := range rep.Sessions {
		safefile.SweepOnce(filepath.Dir(s.File))
		if s.Action == Archived {
			dirs[filepath.Dir(s.File)] = true
		}
	}
	done := 0
	for _, s := range rep.Sessions {
		if s.Action != ToArchive && s.Action != ToDelete {
			continue
		}
		if ctx.Err() != nil {
			s.Action, s.Reason = Skipped, "not reached: interrupted"
			continue
		}
		switch s.Action {
		case ToArchive:
			archiveOne(ctx, s, p, opts.Archive)
		case ToDelete:
			deleteOne(s, opts.BeforeDelete)
		}
		if s.Archive != "" {
			dirs[filepath.Dir(s.Archive)] = true
		}
		done++
		if opts.Progress != nil {
			opts.Progress(done, total)
		}
	}
	rep.sum()
	var errs []error
	for d := range dirs {
		if err := WriteManifest(d); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func archiveOne(ctx context.Context, s *Session, p Policy, o ArchiveOptions) {
	dest := Dest(s, p.ArchiveDir)
	s.Archive = dest
	if p.Dedupe {
		if s.Format == formats.Pi {
			o.BlobStore = BlobStore(s.File, p.ArchiveDir)
		} else {
			s.Reason += "; images not deduplicated: " + string(s.Format) + " files belong to their agent, archived whole"
		}
	}
	info, err := Archive(ctx, s.File, dest, o)
	s.Estimated = false
	s.Reclaimed = 0
	if err != nil {
		var sk *Skip
		if errors.As(err, &sk) {
			s.Action, s.Reason, s.Locked = Skipped, sk.Reason, sk.Locked
		} else {
			s.Action, s.Reason = Failed, err.Error()
		}
		return
	}
	s.Action, s.SHA256, s.info = Archived, info.SHA256, info
	s.Reason = "archived to " + dest + " (" + s.Reason + ")"
	if st, err := os.Stat(dest); err == nil {
		s.Reclaimed = info.Size - st.Size() - info.BlobsAdded
	}
	s.Deduped, s.BlobsAdded = info.BlobBytes, info.BlobsAdded
	s.Done = true
}

// deleteOne removes an archive after checking it still decompresses to
// what its footer says: the sha256 told to before is the session's.
func deleteOne(s *Session, before func(*Session)) {
	info, ok, err := ReadInfo(s.File)
	if err != nil || !ok {
		s.Action, s.Reason = Failed, fmt.Sprintf("no longer a ctxtool archive (%v): not deleted", err)
		return
	}
	if err := verify(s.File, info); err != nil {
		s.Action, s.Reason = Failed, "damaged, not deleted: "+err.Error()
		return
	}
	s.SHA256 = info.SHA256
	if before != nil {
		before(s)
	}
	if err := os.Remove(s.File); err != nil {
		s.Action, s.Reason = Failed, safefile.PathCause(err).Error()
		return
	}
	safefile.SyncDir(filepath.Dir(s.File))
	s.Action, s.Done = Deleted, true
}

// ManifestName is the file in each directory holding archives that lists
// them (path, sha256, size, session, …). It is rebuilt from the archives'
// own footers, so a stale or missing manifest loses nothing.
const ManifestName = "ctxtool-archives.json"

// ManifestEntry is one archive in a manifest.
type ManifestEntry struct {
	Archive string `json:"archive"`
	// CompressedSize is the archive's size; Info the session's.
	CompressedSize int64 `json:"compressedSize"`
	Info
}

// WriteManifest rebuilds the manifest of dir from the ctxtool archives in
// it (atomically; removed when none is left).
func WriteManifest(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil // the directory went with its last archive
	}
	var list []ManifestEntry
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), Suffix) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		info, ok, err := ReadInfo(p)
		if err != nil || !ok {
			continue
		}
		st, err := e.Info()
		if err != nil {
			continue
		}
		list = append(list, ManifestEntry{Archive: p, CompressedSize: st.Size(), Info: *info})
	}
	path := filepath.Join(dir, ManifestName)
	if len(list) == 0 {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return err
		}
		return nil
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Archive < list[j].Archive })
	data, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return err
	}
	return safefile.WriteFile(path, append(data, '\n'), 0o644)
}
