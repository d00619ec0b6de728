package agentlink

import (
	"context"
	"fmt"
	"strings"

	"github.com/ctxtool/ctxtool/pkg/compaction"
)

// Augment mode: the agent's model summarises as usual, and ctxtool audits
// that summary against the facts of the history it summarised (pkg/facts,
// the same audit as ctxtool's own compactions) and adds what it dropped.
// The request is a compaction request whose Summary is the agent's own.

// MaxAugmentFacts bounds the dropped facts an augmentation lists.
const MaxAugmentFacts = 30

// AugmentResponse is the additions to the agent's summary.
type AugmentResponse struct {
	Version int `json:"version"`
	// Additions is the text to add after the agent's summary ("" when it
	// dropped nothing).
	Additions string                   `json:"additions"`
	Audit     *compaction.DetailsAudit `json:"audit,omitempty"`
}

// givenSummary is a summariser whose summary is the agent's own: running
// ctxtool's compaction with it audits that summary, unchanged.
type givenSummary string

func (g givenSummary) Name() string { return "agent" }

// Capabilities: the agent's model already wrote the summary; it is
// audited as it is (never asked again, file lists appended whole).
func (g givenSummary) Capabilities() compaction.Capabilities { return compaction.Capabilities{} }
func (g givenSummary) Summarize(context.Context, *compaction.Request) (string, error) {
	return string(g), nil
}

// AugmentContext is what an augmentation adds besides the dropped facts:
// the user's pins for the session's project and the resume text of the
// session's latest checkpoint (taken just before the compaction).
type AugmentContext struct {
	Pins   []string
	Resume string
}

// Augment audits summary (the agent's) against the request's messages and
// previous summary and writes the facts it dropped as additions, then the
// pins and the resume text of more.
func Augment(ctx context.Context, req *Request, summary string, o Options, more AugmentContext) (*AugmentResponse, error) {
	if strings.TrimSpace(summary) == "" {
		return nil, inputErrorf("augment: the agent's summary is empty")
	}
	o.Summarizer = givenSummary(summary)
	res, err := Compact(ctx, req, o)
	if err != nil {
		return nil, err
	}
	out := &AugmentResponse{Version: Version}
	var b strings.Builder
	if res.Decline == "" && res.Details != nil && res.Details.Ctxtool.Audit != nil {
		a := res.Details.Ctxtool.Audit
		out.Audit = a
		if len(a.DroppedFacts) > 0 {
			b.WriteString("## Also from the summarized history (ctxtool: facts the summary above does not carry)\n")
			for i, f := range a.DroppedFacts {
				if i == MaxAugmentFacts {
					fmt.Fprintf(&b, "- … and %d more (ctxtool search finds them)\n", a.Dropped-i)
					break
				}
				fmt.Fprintf(&b, "- %s: %s\n", f.Class, f.Value)
			}
		}
	}
	if len(more.Pins) > 0 {
		b.WriteString("\n## Pinned by the user (ctxtool: always in force)\n")
		for _, p := range more.Pins {
			fmt.Fprintf(&b, "- %s\n", p)
		}
	}
	if r := strings.TrimSpace(more.Resume); r != "" {
		b.WriteString("\n" + r + "\n")
	}
	out.Additions = strings.TrimSpace(b.String())
	return out, nil
}
