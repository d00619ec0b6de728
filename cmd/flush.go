package cmd

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ctxtool/ctxtool/pkg/compaction"
	"github.com/ctxtool/ctxtool/pkg/config"
	"github.com/ctxtool/ctxtool/pkg/estimate"
	"github.com/ctxtool/ctxtool/pkg/exitcode"
	"github.com/ctxtool/ctxtool/pkg/memflush"
	"github.com/ctxtool/ctxtool/pkg/sessionstore"
)

// FlushOptions are the inputs of `ctxtool flush` (and of compact
// --memory-flush).
type FlushOptions struct {
	IO    *IOStreams
	Files []string
	JSON  bool
	MemoryFlushSettings
	// SessionKey overrides the key the cycle is tracked under.
	SessionKey string
	Force      bool
	DryRun     bool
	// Compaction is the settings the region flushed is planned with (the
	// one compact would summarise) and the summarizer set whose LLM, when
	// it picks one, writes the notes.
	Compaction Compaction
	// Size measures the session and resolves its window.
	Size estimate.Options
	// Wait is how long to wait for the locks of a concurrent flush.
	Wait time.Duration
}

func newFlushCmd(f *Factory, runF func(*FlushOptions) error) *cobra.Command {
	return command(f, &FlushOptions{IO: f.IO}, runF, runFlush, &cobra.Command{
		Use:   "flush FILE|DIR...",
		Short: "Pre-compaction memory flush: append durable facts to memory/YYYY-MM-DD.md",
		Long: `Save what a session is about to lose to compaction into the agent's workspace
notes, as OpenClaw's pre-compaction memory flush does
(docs/design/openclaw-compaction.md).

A session is flushed when its tokens reach
  contextWindow − compaction.reserveTokensFloor (20000)
                − compaction.memoryFlush.softThresholdTokens (4000)
(176,000 for a 200k window), and only once per compaction: the flush
records the session's compactionCount as memoryFlushCompactionCount in the
state directory and, when the session is listed in OpenClaw's sessions.json,
in its store entry (under the store's lock). After the next compaction it is
due again. --force skips the token threshold, not the once-per-cycle rule.
A session file of compaction.memoryFlush.forceFlushTranscriptBytes (2 MiB;
0 = off) or more is due whatever its token count, as in OpenClaw.

The notes go to <workspace>/memory/YYYY-MM-DD.md (created if needed; only
ever appended to). Offline they are the constraints, open requests,
decisions and identifiers found in the history compact would summarise;
with an LLM (--summarizer llm, or auto with llm.* configured) the model gets
that history with OpenClaw's flush prompt (compaction.memoryFlush.prompt and
.systemPrompt) and its answer is appended — NO_REPLY writes nothing. A note
the file already holds is never written again, so concurrent or repeated
flushes do not duplicate entries.`,
		Example: `  ctxtool flush session.jsonl --workspace ~/.openclaw/workspace
  ctxtool flush session.jsonl --workspace ws --force --dry-run --json
  ctxtool compact session.jsonl --memory-flush --workspace ws   # flush, then compact`,
		Args: cobra.MinimumNArgs(1),
	})
}

func (o *FlushOptions) flags(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&o.Workspace, "workspace", "", "the agent's workspace directory (notes go to its memory/)")
	fl.StringVar(&o.SessionKey, "session-key", "", "key the flush cycle is tracked under (default: sessions.json's key, else the file name)")
	fl.BoolVar(&o.Force, "force", false, "flush below the token threshold (still once per compaction)")
	fl.BoolVar(&o.DryRun, "dry-run", false, "show the notes that would be written; write nothing")
	fl.Duration("wait", 0, "wait this long for the locks of a concurrent flush (default 10s)")
	configFlags(cmd, "compaction.memoryFlush.softThresholdTokens", "contextWindow", "model", "compaction.summarizer", "llm.model")
}

func (o *FlushOptions) resolve(f *Factory, cfg *config.Config, c *cobra.Command, args []string) error {
	o.Files = args
	o.JSON = f.JSON
	workspace := o.Workspace // the flag's: the service has none
	var err error
	if o.MemoryFlushSettings, err = f.MemoryFlush(); err != nil {
		return err
	}
	o.Workspace = workspace
	o.Compaction, o.Size = f.Compaction(), f.Measurer()
	o.Wait, _ = c.Flags().GetDuration("wait")
	return o.Compaction.validate()
}

func runFlush(ctx context.Context, o *FlushOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if o.Workspace == "" {
		return exitcode.Newf(exitcode.Usage, "flush needs --workspace DIR: the agent's workspace, whose memory/YYYY-MM-DD.md receives the notes")
	}
	for _, f := range o.Files {
		if f == "-" {
			return exitcode.Newf(exitcode.Usage, "flush reads session files, not stdin: the compaction cycle is tracked per file")
		}
	}
	model, err := o.model()
	if err != nil {
		return err
	}
	files, err := sessionFiles(o.IO.ErrOut, o.Files, false, false)
	if err != nil {
		return err
	}
	var exit batchExit
	for _, file := range files {
		res, err := o.flushFile(ctx, file, model, o.Force)
		if err != nil {
			exit.fail(o.IO.ErrOut, err)
			if res == nil {
				continue
			}
		}
		warnFile(o.IO.ErrOut, file, res.Warnings)
		if o.JSON {
			if err := writeJSONLine(o.IO.Out, res); err != nil {
				return err
			}
		} else {
			printFlush(o, res)
		}
	}
	return exit.err()
}

// model is the LLM that writes the notes (nil: the offline detector),
// picked like compact's summariser.
func (o *FlushOptions) model() (memflush.Completer, error) {
	sum, err := o.Compaction.pick(o.IO.ErrOut)
	if err != nil {
		return nil, err
	}
	if m := sum.Capabilities().Model; m != nil {
		return m, nil
	}
	return nil, nil
}

// flushFile flushes one session; force skips the token threshold.
func (o *FlushOptions) flushFile(ctx context.Context, file string, model memflush.Completer, force bool) (*memflush.Result, error) {
	if err := checkInput(file); err != nil {
		return nil, err
	}
	if !o.Enabled {
		return &memflush.Result{File: file, Reason: "disabled (compaction.memoryFlush.enabled: false)", Entries: []string{}}, nil
	}
	floor := o.Compaction.Settings.ReserveTokensFloor
	if floor < 0 {
		floor = 0 // -1 is "floor disabled"
	}
	return memflush.Run(ctx, memflush.Options{
		File: file, Workspace: o.Workspace, StateDir: o.StateDir, SessionKey: o.SessionKey,
		Size:               o.Size,
		ReserveTokensFloor: floor, SoftThresholdTokens: o.SoftThresholdTokens, ForceFlushTranscriptBytes: o.ForceFlushTranscriptBytes,
		Force: force, Compaction: o.Compaction.Settings, Model: model,
		Prompt: o.Prompt, SystemPrompt: o.SystemPrompt, DryRun: o.DryRun, Wait: o.Wait,
	})
}

func printFlush(o *FlushOptions, r *memflush.Result) {
	w := o.IO.Out
	t := newTable(w)
	t.row("file", r.File)
	status := "flushed"
	switch {
	case !r.Flushed:
		status = "not flushed: " + r.Reason
	case r.DryRun:
		status = "would flush (dry run)"
	case r.NoReply:
		status = "flushed: the model had nothing to store (NO_REPLY)"
	}
	t.row("result", status)
	if r.SessionKey != "" {
		t.row("session key", r.SessionKey)
	}
	if r.ContextWindow > 0 {
		t.row("tokens", fmt.Sprintf("%s of %s (flush at %s)", humanInt(r.Tokens), humanInt(r.ContextWindow), humanInt(r.Threshold)))
		if r.DueBySize {
			t.row("due by size", fmt.Sprintf("the file is %s bytes: at least compaction.memoryFlush.forceFlushTranscriptBytes", humanInt(int(r.TranscriptBytes))))
		}
		last := "never"
		if r.LastFlushCompactionCount != nil {
			last = fmt.Sprint(*r.LastFlushCompactionCount)
		}
		t.row("compactions", fmt.Sprintf("%d (last flush at %s)", r.CompactionCount, last))
	}
	if r.RegionMessages > 0 {
		t.row("region", fmt.Sprintf("%d messages, lines %d–%d", r.RegionMessages, r.FromLine, r.ToLine))
	}
	if r.Flushed {
		t.row("memory file", r.MemoryFile)
		t.row("notes", fmt.Sprintf("%d new (%s), %d already there", len(r.Entries), r.Source, r.Duplicates))
	}
	if r.SessionsJSON != "" {
		t.row("sessions.json", "memoryFlushCompactionCount recorded in "+r.SessionsJSON)
	}
	t.flush()
	if len(r.Entries) > 0 {
		fmt.Fprintln(w, "\n"+strings.Join(r.Entries, "\n"))
	}
	fmt.Fprintln(w)
}

// flushBeforeCompaction is compact --memory-flush: the flush before
// compacting — forced past its token threshold (the compaction happens
// anyway), unless --if-needed makes the compaction itself conditional: then
// the flush's own, lower threshold decides, as in OpenClaw. A failed flush
// stops the compaction of that file: its notes would be lost with the
// history.
func flushBeforeCompaction(ctx context.Context, o *CompactOptions, file string) error {
	fo := &FlushOptions{IO: o.IO, MemoryFlushSettings: o.Flush, DryRun: o.DryRun, Compaction: o.Compaction, Size: o.Size, Wait: o.Wait}
	model, err := fo.model()
	if err != nil {
		return err
	}
	r, err := fo.flushFile(ctx, file, model, !o.IfNeeded)
	if err != nil {
		return fmt.Errorf("memory flush before compaction failed, %s not compacted: %w", file, err)
	}
	warnFile(o.IO.ErrOut, file, r.Warnings)
	if r.Flushed {
		fmt.Fprintf(o.IO.ErrOut, "memory flush: %d new notes in %s (%d already there)\n", len(r.Entries), r.MemoryFile, r.Duplicates)
	} else {
		fmt.Fprintf(o.IO.ErrOut, "memory flush: %s\n", r.Reason)
	}
	return nil
}

// loadFlush reads the memory-flush settings for compact --memory-flush.
func (o *CompactOptions) loadFlush(f *Factory) error {
	if o.Flush.Workspace == "" {
		return fmt.Errorf("--memory-flush needs --workspace DIR: the agent's workspace, whose memory/YYYY-MM-DD.md receives the notes")
	}
	workspace := o.Flush.Workspace // the flag's: the service has none
	var err error
	if o.Flush, err = f.MemoryFlush(); err != nil {
		return err
	}
	o.Flush.Workspace = workspace
	return nil
}

// MemoryFlushSettings are the pre-compaction memory flush's settings, which
// flush and compact --memory-flush share.
type MemoryFlushSettings struct {
	Enabled                   bool
	Workspace                 string
	StateDir                  string
	SoftThresholdTokens       int
	ForceFlushTranscriptBytes int64
	Prompt                    string
	SystemPrompt              string
}

// recordCompaction updates OpenClaw's sessions.json after ctxtool
// compacted a session it lists (compactionCount + 1, totalTokens =
// tokensAfter, breakdown cleared). The compaction is written either way: a
// store that cannot be updated is a warning.
func recordCompaction(ctx context.Context, o *CompactOptions, res *compaction.Result) {
	if !res.Compacted || res.DryRun {
		return
	}
	ref, err := sessionstore.RecordCompaction(ctx, res.File, res.TokensAfter, o.Wait)
	switch {
	case err != nil:
		w := "sessions.json not updated after the compaction: " + err.Error()
		res.Warnings = append(res.Warnings, w)
	case ref != nil:
		fmt.Fprintf(o.IO.ErrOut, "sessions.json: %s compactionCount %d, totalTokens %d\n", ref.Key, ref.Entry.CompactionCount, res.TokensAfter)
	}
}
