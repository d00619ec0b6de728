package checkpoint

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// RestoreOptions configures Restore (the restore command).
type RestoreOptions struct {
	// Name is the session as the user named it (FILE or key), for errors.
	Name   string
	Target Target
	ID     string // "" = the latest readable checkpoint
	// Append appends the resume text to Target.File (AppendResume), under
	// the session lock, waiting up to Wait for it; Now is the entry's clock
	// (nil: time.Now).
	Append bool
	Wait   time.Duration
	Now    func() time.Time
	Count  func(string) int // tokens of the resume text; nil: DefaultCount
}

// RestoreReport is what Restore did; its JSON is restore's output line.
type RestoreReport struct {
	File         string `json:"file,omitempty"`
	SessionKey   string `json:"sessionKey"`
	CheckpointID string `json:"checkpointId"`
	Path         string `json:"path"`
	ResumeTokens int    `json:"resumeTokens"`
	// Text is the resume text; an appended one is in the session instead.
	Text     string `json:"text,omitempty"`
	Appended bool   `json:"appended"`
	EntryID  string `json:"entryId,omitempty"`
	Line     int    `json:"line,omitempty"`
	// Reason says why nothing was appended (the text is already the
	// session's last entry).
	Reason string `json:"reason,omitempty"`
	// Warnings name the unreadable checkpoints passed over for an older one.
	Warnings       []string               `json:"warnings,omitempty"`
	MalformedLines []transcript.Malformed `json:"malformedLines,omitempty"`

	// Checkpoint is the whole checkpoint, for output that shows it (the
	// caller sets it).
	Checkpoint *Checkpoint `json:"checkpoint,omitempty"`
}

// Restore renders the checkpoint of o.Target that restore shows (o.ID, or
// the latest readable one) as the resume text and, with o.Append, appends
// it to the session file unless it is the session's last entry already.
// It returns the report and the checkpoint; the report is never nil, and
// carries the warnings of the selection even with an error.
func (s *Store) Restore(ctx context.Context, o RestoreOptions) (*RestoreReport, *Checkpoint, error) {
	t := o.Target
	cp, warnings, err := s.Select(t.Key, o.ID)
	rep := &RestoreReport{File: t.File, SessionKey: t.Key, Warnings: warnings}
	if err != nil {
		return rep, nil, fmt.Errorf("restore %s: %w", o.Name, err)
	}
	count := o.Count
	if count == nil {
		count = DefaultCount
	}
	text := Render(cp, RenderOptions{Count: count, KeepSecrets: s.KeepSecrets})
	rep.CheckpointID, rep.Path, rep.ResumeTokens = cp.Meta.CheckpointID, filepath.Join(s.Dir(t.Key), cp.Meta.CheckpointID+".yaml"), count(text)
	if !o.Append {
		rep.Text = text
		return rep, cp, nil
	}
	a, err := AppendResume(ctx, t.File, cp, text, o.Wait, o.Now)
	if err != nil {
		return rep, cp, err
	}
	rep.Appended, rep.EntryID, rep.Line, rep.MalformedLines = !a.AlreadyLast, a.EntryID, a.Line, a.Malformed
	if a.AlreadyLast {
		rep.Reason = fmt.Sprintf("already appended: the session's last entry (line %d) is %s's resume text", a.Line, cp.Meta.CheckpointID)
	}
	return rep, cp, nil
}
