package agentlink

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/ctxtool/ctxtool/pkg/compaction"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// Options are ctxtool's side of a compaction: its configured settings and
// summariser. The agent's keepRecentTokens and reserveTokens, when given,
// replace the settings' (the agent cut with them).
type Options struct {
	Settings   compaction.Settings
	Summarizer compaction.Summarizer
	// TempDir holds the request's messages as a session file while they
	// are summarised (default os.TempDir()). The file is unlinked as soon
	// as it is made: nothing of the conversation stays on disk, even after
	// a kill -9.
	TempDir string
}

// Compact answers a request: it summarises the preparation's messages with
// ctxtool's strategy and summariser, keeping the agent's cut. A request
// with nothing to summarise is declined.
func Compact(ctx context.Context, req *Request, o Options) (*Response, error) {
	p := &req.Preparation
	if len(p.MessagesToSummarize)+len(p.TurnPrefixMessages) == 0 {
		return &Response{Version: Version, Decline: "nothing to summarise: the preparation has no messages"}, nil
	}
	if p.Settings.Enabled != nil && !*p.Settings.Enabled && req.Reason != "manual" {
		return &Response{Version: Version, Decline: "the agent's compaction is disabled in its settings"}, nil
	}
	set := o.Settings
	if p.Settings.KeepRecentTokens > 0 {
		set.KeepRecentTokens = p.Settings.KeepRecentTokens
	}
	if p.Settings.ReserveTokens > 0 {
		set.ReserveTokens = p.Settings.ReserveTokens
	}
	if req.CustomInstructions != "" {
		set.CustomInstructions = joinNonEmpty(set.CustomInstructions, req.CustomInstructions)
	}
	if si := req.SummarizationInstructions; si != nil && strings.TrimSpace(si.IdentifierInstructions) != "" {
		set.CustomInstructions = joinNonEmpty(set.CustomInstructions, si.IdentifierInstructions)
	}
	set.Force = true

	s, first, err := loadRequest(req, o.TempDir)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	prep, err := compaction.PrepareCut(s, set, len(p.MessagesToSummarize), len(p.TurnPrefixMessages))
	if err != nil {
		return nil, err
	}
	out, err := compaction.Compact(ctx, s, prep, set, o.Summarizer)
	if err != nil {
		return nil, fmt.Errorf("the %s summariser: %w", o.Summarizer.Name(), err)
	}
	strategy := set.Strategy
	if strategy == "" {
		strategy = compaction.StrategyDefault
	}
	d := &Details{ReadFiles: out.ReadFiles, ModifiedFiles: out.ModifiedFiles,
		Ctxtool: DetailsCtxtool{Contract: Version, Strategy: strategy, Summarizer: o.Summarizer.Name(),
			Audit: auditDetails(out.Audit, first), Fallback: out.Fallback}}
	if d.ReadFiles == nil {
		d.ReadFiles = []string{}
	}
	if d.ModifiedFiles == nil {
		d.ModifiedFiles = []string{}
	}
	return &Response{Version: Version, Summary: out.Summary, FirstKeptEntryID: p.FirstKeptEntryID,
		TokensBefore: p.TokensBefore, Details: d}, nil
}

// auditDetails is the audit as details carry it, each dropped fact's
// session line turned into its message's position: first is the line of
// the first summarised message.
func auditDetails(a *compaction.Audit, first int) *compaction.DetailsAudit {
	d := a.ForDetails()
	if d == nil {
		return nil
	}
	for i := range d.DroppedFacts {
		d.DroppedFacts[i].Line = max(d.DroppedFacts[i].Line-first+1, 0)
	}
	return d
}

// loadRequest loads the request's messages as the pi session writeSession
// writes; first is the line of the first summarised message.
func loadRequest(req *Request, dir string) (*transcript.Session, int, error) {
	f, size, first, err := writeSession(req, dir)
	if err != nil {
		return nil, 0, err
	}
	s, err := transcript.LoadOpen("agent request", f, size)
	if err != nil {
		return nil, 0, fmt.Errorf("reading the request's messages back: %w", err)
	}
	return s, first, nil
}

// writeSession writes the request's messages as a pi v3 session: the
// header, a compaction carrying the previous summary and file lists (when
// there is one), then one entry per message — summarised, turn prefix,
// kept — each the child of the one before — into an unlinked temp file,
// rewound. first is the line of the first summarised message.
func writeSession(req *Request, dir string) (f *os.File, size int64, first int, err error) {
	p := &req.Preparation
	var b bytes.Buffer
	stamp := time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	id := req.Session.ID
	if id == "" {
		id = "agent-request"
	}
	header := map[string]any{"type": "session", "version": 3, "id": id, "timestamp": stamp, "cwd": req.Session.Cwd}
	if err := line(&b, header); err != nil {
		return nil, 0, 0, err
	}
	parent := any(nil)
	n := 0
	next := func() string { n++; return fmt.Sprintf("a%07x", n) }
	all := slices.Concat(p.MessagesToSummarize, p.TurnPrefixMessages, req.KeptMessages)
	first = 2
	if p.PreviousSummary != "" {
		cid := next()
		e := map[string]any{"type": "compaction", "id": cid, "parentId": parent, "timestamp": stamp,
			"summary": p.PreviousSummary, "firstKeptEntryId": fmt.Sprintf("a%07x", n+1), "tokensBefore": 0,
			"details": previousFiles(req)}
		if err := line(&b, e); err != nil {
			return nil, 0, 0, err
		}
		parent = cid
		first = 3
	}
	for i, raw := range all {
		eid := next()
		e, err := entryOf(raw, eid, parent, stamp)
		if err != nil {
			return nil, 0, 0, inputErrorf("message %d of the request: %v", i+1, err)
		}
		if err := line(&b, e); err != nil {
			return nil, 0, 0, err
		}
		parent = eid
	}
	f, err = os.CreateTemp(dir, "ctxtool-agent-*.jsonl")
	if err != nil {
		return nil, 0, 0, fmt.Errorf("a temp file for the request's messages (set TMPDIR to a writable directory): %w", err)
	}
	os.Remove(f.Name())
	if _, err = f.Write(b.Bytes()); err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return nil, 0, 0, fmt.Errorf("writing the request's messages to a temp file (is TMPDIR full?): %w", err)
	}
	return f, int64(b.Len()), first, nil
}

// previousFiles are the file lists the previous compaction carries: its
// details' lists plus the agent's file operations (which, for pi, hold the
// lists of a compaction pi wrote itself).
func previousFiles(req *Request) map[string]any {
	var d struct {
		ReadFiles     []string `json:"readFiles"`
		ModifiedFiles []string `json:"modifiedFiles"`
	}
	if len(req.PreviousDetails) > 0 {
		_ = json.Unmarshal(req.PreviousDetails, &d) // checked to be an object; odd lists are ignored
	}
	ops := req.Preparation.FileOps
	read := slices.Concat(d.ReadFiles, ops.Read)
	mod := slices.Concat(d.ModifiedFiles, ops.Written, ops.Edited)
	slices.Sort(read)
	slices.Sort(mod)
	return map[string]any{"readFiles": slices.Compact(read), "modifiedFiles": slices.Compact(mod)}
}

// entryOf wraps one of the agent's messages in the session entry pi would
// have stored it as: custom and branch-summary messages are entries of
// their own type, everything else a message entry holding it verbatim.
func entryOf(raw json.RawMessage, id string, parent any, stamp string) (map[string]any, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	var role string
	_ = json.Unmarshal(m["role"], &role)
	e := map[string]any{"id": id, "parentId": parent, "timestamp": stamp}
	switch role {
	case "custom":
		e["type"] = "custom_message"
		for _, k := range []string{"customType", "content", "display", "details"} {
			if v, ok := m[k]; ok {
				e[k] = v
			}
		}
		if _, ok := e["display"]; !ok {
			e["display"] = true
		}
	case "branchSummary":
		e["type"] = "branch_summary"
		e["summary"] = m["summary"]
		e["fromId"] = "agent"
	case "compactionSummary":
		// not in a pi preparation; read as a custom message so its text
		// is summarised rather than lost
		e["type"] = "custom_message"
		e["customType"] = "compactionSummary"
		e["content"] = m["summary"]
		e["display"] = false
	default:
		e["type"] = "message"
		e["message"] = raw
	}
	return e, nil
}

func line(b *bytes.Buffer, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b.Write(data)
	b.WriteByte('\n')
	return nil
}

func joinNonEmpty(a, b string) string {
	if a == "" {
		return b
	}
	return a + "\n" + b
}
