package cmd

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ctxtool/ctxtool/pkg/config"
	"github.com/ctxtool/ctxtool/pkg/hooks"
)

// HookOptions are the inputs of `ctxtool hook`.
type HookOptions struct {
	IO       *IOStreams
	Agent    string // claude-code, codex ("" = guess from the JSON)
	Event    string // the event the hook was installed for ("" = hook_event_name)
	StateDir string
	Home     string
	Timeout  time.Duration
	// Roots are extra directories a transcript_path may be under
	// (CTXTOOL_HOOK_ROOTS, colon-separated).
	Roots []string
	Now   func() time.Time
}

// The hook reads no config file itself: a broken config must not make a
// hook fail. The state directory comes from the flag, CTXTOOL_STATE_DIR,
// or the config when it loads.
func (o *HookOptions) readsNoConfig() {}

func newHookCmd(f *Factory, runF func(*HookOptions) error) *cobra.Command {
	return command(f, &HookOptions{IO: f.IO}, runF, runHook, &cobra.Command{
		Use:   "hook",
		Short: "Answer a Claude Code or Codex hook (JSON on stdin): state that survives the agent's compaction",
		Long: `Read one hook's JSON on stdin, as Claude Code and Codex send it, and answer in
the agent's shape ('ctxtool install claude-code|codex' installs it):

  PreCompact        checkpoint the session (transcript_path); for Claude Code,
                    print what the summary must keep: the constraints,
                    decisions, open requests and identifiers of the history
                    about to be summarized (at most 600 tokens)
  SessionStart      after a compaction or on resume: this session's pins, what
                    the agent's summary left out, and its resume text (at
                    most 800 tokens) as hookSpecificOutput.additionalContext
  PostCompact       audit the agent's summary against the facts of the history
                    it replaced; what it dropped goes back at the next
                    SessionStart or prompt
  UserPromptSubmit  hand back facts the last summary dropped, once
  Stop              read the turn's new lines (keeps the next hooks fast)

Each hook reads only the lines appended since the last one. The input is
untrusted: at most 4 MiB, a plain session id, a transcript that is a regular
file under the agent's session directory (~/.claude/projects, ~/.codex/sessions,
or CTXTOOL_HOOK_ROOTS). A hook never fails the agent: a refusal or an error
is logged to <state dir>/hooks/hook.log and the hook answers nothing, exit 0.`,
		Example: `  echo '{"session_id":"s1","transcript_path":"'$HOME'/.claude/projects/p/s1.jsonl","hook_event_name":"SessionStart","source":"compact"}' | ctxtool hook --agent claude-code`,
		Args:    cobra.NoArgs,
	})
}

func (o *HookOptions) flags(c *cobra.Command) {
	c.Flags().StringVar(&o.Agent, "agent", "", "claude-code|codex (default: guessed from the JSON)")
	c.Flags().StringVar(&o.Event, "event", "", "the hook event (default: the JSON's hook_event_name)")
	c.Flags().DurationVar(&o.Timeout, "timeout", 10*time.Second, "answer nothing after this long (the agent goes on)")
}

func (o *HookOptions) resolve(f *Factory, _ *config.Config, c *cobra.Command, _ []string) error {
	o.Now = f.Clock()
	o.StateDir = hookStateDir(f, c)
	o.Home, _ = os.UserHomeDir()
	o.Roots = hookRoots()
	return nil
}

// hookRoots are the extra transcript directories of CTXTOOL_HOOK_ROOTS
// (absolute paths, colon-separated).
func hookRoots() []string {
	var roots []string
	for _, d := range filepath.SplitList(os.Getenv("CTXTOOL_HOOK_ROOTS")) {
		if filepath.IsAbs(d) {
			roots = append(roots, d)
		}
	}
	return roots
}

// hookStateDir is the state directory without failing on a broken config.
func hookStateDir(f *Factory, c *cobra.Command) (dir string) {
	if fl := c.Flags().Lookup("state-dir"); fl != nil && fl.Changed {
		return fl.Value.String()
	}
	if d := os.Getenv("CTXTOOL_STATE_DIR"); d != "" {
		return d
	}
	if cfg, err := f.Config(); err == nil {
		return cfg.StateDir(c.Flags())
	}
	if x := os.Getenv("XDG_STATE_HOME"); x != "" {
		return filepath.Join(x, "ctxtool")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".local", "state", "ctxtool")
}

// runHook always returns nil: whatever happens is logged.
func runHook(_ context.Context, o *HookOptions) error {
	if o.Now == nil {
		o.Now = time.Now
	}
	start := o.Now()
	logf := hookLogger(o.StateDir, o.Now)
	type result struct {
		ans *hooks.Answer
		in  *hooks.Input
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- result{err: fmt.Errorf("panic: %v\n%s", r, debug.Stack())}
			}
		}()
		in, err := hooks.Parse(o.IO.In, o.Agent, o.Event)
		if err != nil {
			done <- result{err: err}
			return
		}
		h := &hooks.Handler{StateDir: o.StateDir, Home: o.Home, ExtraRoots: o.Roots, Now: o.Now, Spawn: spawnCheckpoint(o.StateDir)}
		ans, err := h.Handle(in)
		done <- result{ans, in, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(o.Timeout):
		logf("-", o.Event, "-", fmt.Sprintf("timed out after %s: answered nothing", o.Timeout))
		return nil
	}
	agent, event, sid := o.Agent, o.Event, "-"
	if r.in != nil {
		agent, event, sid = r.in.Agent, r.in.Event, r.in.SessionID
	}
	took := o.Now().Sub(start).Round(time.Millisecond)
	if r.err != nil {
		logf(agent, event, sid, fmt.Sprintf("answered nothing (%s): %v", took, r.err))
		return nil
	}
	for _, l := range r.ans.Log {
		logf(agent, event, sid, l)
	}
	logf(agent, event, sid, fmt.Sprintf("answered %d bytes in %s", len(r.ans.Stdout), took))
	if r.ans.Stdout != "" {
		fmt.Fprint(o.IO.Out, r.ans.Stdout)
	}
	return nil
}

// hookLogger appends to <state>/hooks/hook.log (rotated to hook.log.1 past
// 1 MiB); when even that fails, to stderr, which the agents show in their
// debug output only.
func hookLogger(stateDir string, now func() time.Time) func(agent, event, sid, msg string) {
	path := filepath.Join(stateDir, "hooks", "hook.log")
	return func(agent, event, sid, msg string) {
		line := fmt.Sprintf("%s %s %s %s: %s\n", now().UTC().Format(time.RFC3339Nano), agent, event, sid, strings.ReplaceAll(msg, "\n", " | "))
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err == nil {
			if fi, err := os.Stat(path); err == nil && fi.Size() > 1<<20 {
				_ = os.Rename(path, path+".1")
			}
			if f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
				_, werr := f.WriteString(line)
				if f.Close() == nil && werr == nil {
					return
				}
			}
		}
		fmt.Fprint(os.Stderr, "ctxtool hook: "+line)
	}
}

// spawnCheckpoint starts `ctxtool checkpoint` for a large transcript in
// its own session, detached from the hook's pipes, so the agent does not
// wait for it.
func spawnCheckpoint(stateDir string) func(file, key string) error {
	return func(file, key string) error {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		cmd := exec.Command(exe, "checkpoint", "--state-dir", stateDir, "--session-key", key, "--trigger", "compaction", "--force", file)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			return err
		}
		return cmd.Process.Release()
	}
}
