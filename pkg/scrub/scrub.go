// Package scrub rewrites a pi session with its secrets redacted (the
// `scrub` command): every credential pkg/secrets finds in a line's raw
// bytes becomes [secret:<kind>:<fingerprint>], the fingerprint lint
// reports, and nothing else changes: the same lines, ids, parents and
// order, so pi loads the same tree and context.
//
// The rewrite is --truncate's (sessionwrite.Rewrite): under the session
// lock, temp file + fsync + rename, the original kept as
// <file>.bak.<stamp>, lines that writers ignoring the lock append meanwhile
// carried over. A kill at any point leaves the original in the file or in
// the backup.
package scrub

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/ctxtool/ctxtool/pkg/filelock"
	"github.com/ctxtool/ctxtool/pkg/formats"
	"github.com/ctxtool/ctxtool/pkg/secrets"
	"github.com/ctxtool/ctxtool/pkg/sessionwrite"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// Options are the inputs of Run.
type Options struct {
	// DryRun reports what would be redacted and writes nothing.
	DryRun bool
	// Idle refuses a session written to less than this long ago (an agent
	// is probably active); Wait is how long to wait for the session lock.
	Idle, Wait time.Duration
	// settle overrides sessionwrite.DefaultSettle (tests).
	settle time.Duration
}

// Found is one redacted secret (never its value).
type Found struct {
	Line        int    `json:"line"`
	Kind        string `json:"kind"`
	Fingerprint string `json:"fingerprint"`
}

// Result is what `ctxtool scrub --json` prints for one file.
type Result struct {
	File     string  `json:"file"`
	Scrubbed bool    `json:"scrubbed"`
	DryRun   bool    `json:"dryRun,omitempty"`
	Secrets  []Found `json:"secrets"`
	Lines    int     `json:"lines"` // lines changed
	// Backup is the original, secrets included: delete it once the
	// scrubbed file is checked.
	Backup       string   `json:"backup,omitempty"`
	CarriedLines int      `json:"carriedLines,omitempty"`
	Warnings     []string `json:"warnings,omitempty"`
}

// Run scrubs one session file. A file without secrets is left untouched.
func Run(ctx context.Context, path string, o Options) (*Result, error) {
	res := &Result{File: path, DryRun: o.DryRun, Secrets: []Found{}}
	probe, err := transcript.Load(path)
	if err != nil {
		return nil, err
	}
	ro := probe.Writable()
	probe.Close()
	var roe *formats.ReadOnlyError
	if errors.As(ro, &roe) {
		return nil, fmt.Errorf("%s: scrub rewrites pi sessions only (this is %s, which ctxtool never writes); "+
			"to share it redacted, export a pi copy and scrub that: ctxtool export %s --to pi -o copy.jsonl && ctxtool scrub copy.jsonl",
			path, roe.Format, path)
	}
	if ro != nil {
		return nil, ro
	}
	if !o.DryRun {
		if err := sessionwrite.CheckIdle(path, o.Idle); err != nil {
			return nil, err
		}
		lock, err := filelock.Acquire(ctx, path, o.Wait)
		if err != nil {
			return nil, err
		}
		defer lock.Release()
	}
	// Loaded again under the lock: what Rewrite replaces is these bytes.
	s, err := transcript.Load(path)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	content, err := scrubbed(s, res)
	if err != nil {
		return nil, err
	}
	if o.DryRun || res.Lines == 0 {
		return res, nil
	}
	rr, err := sessionwrite.Rewrite(s, content, sessionwrite.RewriteOptions{Idle: o.Idle, Settle: o.settle})
	if errors.Is(err, sessionwrite.ErrFileChanged) {
		return nil, fmt.Errorf("%s: the file changed while it was scrubbed; nothing written — run scrub again", path)
	}
	if err != nil {
		return nil, err
	}
	res.Scrubbed, res.Backup, res.CarriedLines = true, rr.Backup, rr.CarriedLines
	// The backup holds the secrets: readable by the owner alone.
	if err := os.Chmod(rr.Backup, 0o600); err != nil {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%s: %v", rr.Backup, err))
	}
	if rr.CarriedLines > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%d lines another writer appended meanwhile were carried over as they were: run scrub again", rr.CarriedLines))
	}
	if len(rr.HeldBy) > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("processes %v still had the old file open: what they write to it now is only in %s", rr.HeldBy, rr.Backup))
	}
	return res, nil
}

// scrubbed reads the file's bytes as loaded and redacts each line; the
// result keeps every line (malformed ones too) and their order.
func scrubbed(s *transcript.Session, res *Result) ([]byte, error) {
	f, err := os.Open(s.File)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data := make([]byte, s.Size)
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, fmt.Errorf("%s: read: %w", s.File, err)
	}
	var out bytes.Buffer
	out.Grow(len(data))
	line := 0
	for rest := data; len(rest) > 0; {
		line++
		l := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			l = rest[:i+1]
		}
		rest = rest[len(l):]
		spans := secrets.Find(l)
		if len(spans) == 0 {
			out.Write(l)
			continue
		}
		for _, sp := range spans {
			res.Secrets = append(res.Secrets, Found{Line: line, Kind: sp.Kind, Fingerprint: sp.Fingerprint})
		}
		res.Lines++
		out.Write(secrets.RedactJSON(l))
	}
	return out.Bytes(), nil
}
