package compaction

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Hooks are shell commands run around a compaction, like OpenClaw's
// before_compaction / after_compaction plugin hooks (docs/design/openclaw-compaction.md): each
// receives its event object as JSON on stdin, runs in parallel with the
// compaction's own work, is killed after Timeout, and its failure is
// logged, never fatal — a hook cannot stop or break a compaction.
type Hooks struct {
	// BeforeCompaction runs once the plan is made, while the summary is
	// written (compaction.hooks.beforeCompaction).
	BeforeCompaction string
	// AfterCompaction runs after the entry is written and verified
	// (compaction.hooks.afterCompaction).
	AfterCompaction string
	// Timeout bounds each run (0: DefaultHookTimeout).
	Timeout time.Duration
}

// DefaultHookTimeout is compaction.hooks.timeout.
const DefaultHookTimeout = 30 * time.Second

// HookKind names a hook.
type HookKind string

// The hooks.
const (
	HookBefore HookKind = "beforeCompaction"
	HookAfter  HookKind = "afterCompaction"
)

// BeforeEvent is OpenClaw's PluginHookBeforeCompactionEvent plus what a
// command needs to find the session.
type BeforeEvent struct {
	Hook         HookKind `json:"hook"`
	MessageCount int      `json:"messageCount"`
	TokenCount   int      `json:"tokenCount"`
	SessionFile  string   `json:"sessionFile"`
	// ToSummarize counts the messages about to be summarised.
	ToSummarize int `json:"toSummarize"`
}

// AfterEvent is OpenClaw's PluginHookAfterCompactionEvent: MessageCount
// and TokenCount describe the context after the compaction,
// CompactedCount the messages it replaced by the summary.
type AfterEvent struct {
	Hook             HookKind `json:"hook"`
	MessageCount     int      `json:"messageCount"`
	TokenCount       int      `json:"tokenCount"`
	CompactedCount   int      `json:"compactedCount"`
	SessionFile      string   `json:"sessionFile"`
	FirstKeptEntryID string   `json:"firstKeptEntryId"`
	TokensBefore     int      `json:"tokensBefore"`
	Backup           string   `json:"backup,omitempty"`
}

func beforeEvent(path string, p *Preparation) BeforeEvent {
	return BeforeEvent{Hook: HookBefore, MessageCount: len(p.Before.Messages), TokenCount: p.TokensBefore, SessionFile: path,
		ToSummarize: len(p.Summarize) + len(p.TurnPrefix)}
}

func afterEvent(path string, r *Result) AfterEvent {
	return AfterEvent{Hook: HookAfter, MessageCount: r.KeptMessages + 1, TokenCount: r.TokensAfter, CompactedCount: r.SummarizedMessages,
		SessionFile: path, FirstKeptEntryID: r.FirstKeptEntryID, TokensBefore: r.TokensBefore, Backup: r.Backup}
}

// running is a started hook; wait returns once it ended or was killed.
type running struct{ done chan struct{} }

func (r running) wait() {
	if r.done != nil {
		<-r.done
	}
}

// start runs the hook of kind with event on stdin in the background (sh
// -c, in the session's process group of its own so a timeout kills every
// process it started). Failures and timeouts go to logf.
func (h Hooks) start(ctx context.Context, kind HookKind, event any, logf func(string, ...any)) running {
	command := h.BeforeCompaction
	if kind == HookAfter {
		command = h.AfterCompaction
	}
	if strings.TrimSpace(command) == "" {
		return running{}
	}
	timeout := h.Timeout
	if timeout <= 0 {
		timeout = DefaultHookTimeout
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		payload, _ := json.Marshal(event)
		out, err := runCommand(ctx, command, payload, timeout, map[string]string{"CTXTOOL_HOOK": string(kind)})
		if err != nil {
			logf("compaction.hooks.%s: %v (ignored: hooks never stop a compaction)", kind, err)
			return
		}
		if t := strings.TrimSpace(string(out)); t != "" {
			logf("compaction.hooks.%s: %s", kind, oneLine(t, 300))
		}
	}()
	return running{done: done}
}

// runCommand runs command with sh -c, stdin on its standard input, and
// returns its standard output. It fails with the command's stderr on a
// non-zero exit, and kills the command's whole process group when timeout
// passes or ctx ends.
func runCommand(ctx context.Context, command string, stdin []byte, timeout time.Duration, env map[string]string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", command)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	ownProcessGroup(cmd)
	// After the kill, stop waiting for pipes a grandchild may hold open.
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		return nil, fmt.Errorf("%q did not finish within %s and was killed", command, timeout)
	}
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg != "" {
			return nil, fmt.Errorf("%q failed (%w): %s", command, err, oneLine(msg, 300))
		}
		return nil, fmt.Errorf("%q failed: %w", command, err)
	}
	return stdout.Bytes(), nil
}
