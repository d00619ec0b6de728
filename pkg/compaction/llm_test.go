package compaction

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/factgen"
	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/internal/testkit/llmtest"
	"github.com/ctxtool/ctxtool/pkg/llm"
)

func fixture(name string) string {
	return oracle.Fixture(name)
}

func llmSummarizer(t *testing.T, srv *llmtest.Server, mut func(*llm.Config)) *LLMSummarizer {
	t.Helper()
	cfg := llm.Config{BaseURL: srv.BaseURL(), Model: "test-model", APIKey: "sk-test", Timeout: 5 * time.Second,
		MaxRetries: 3, MinBackoff: 10 * time.Millisecond}
	if mut != nil {
		mut(&cfg)
	}
	c, err := llm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return NewLLMSummarizer(c)
}

func TestLLMSuccessEveryStrategy(t *testing.T) {
	oracle.Require(t)
	for _, strategy := range strategies {
		t.Run(strategy, func(t *testing.T) {
			srv := llmtest.New()
			defer srv.Close()
			file := testkit.CopyToTemp(t, fixture("pi-v1-large-session.jsonl"))
			orig, _ := os.ReadFile(file)
			before := oracle.CheckOne(t, file)
			res, err := CompactFile(context.Background(), file, Options{Settings: Settings{Strategy: strategy, Force: true},
				Summarizer: llmSummarizer(t, srv, nil)})
			if err != nil {
				t.Fatal(err)
			}
			checkWritten(t, orig, before, file, res, false)
			reqs := srv.Requests()
			if res.LLMCalls != len(reqs) || res.LLMCalls == 0 || res.LLMInputTokens == 0 || res.LLMOutputTokens == 0 {
				t.Fatalf("reported %d calls / %d in / %d out, server saw %d requests", res.LLMCalls, res.LLMInputTokens, res.LLMOutputTokens, len(reqs))
			}
			r := oracle.CheckOne(t, file)
			if !strings.Contains(r.LastCompaction.Summary, "Summary from the test model.") {
				t.Fatalf("summary is not the model's: %.200s", r.LastCompaction.Summary)
			}
			if !strings.Contains(string(r.LastCompaction.Details), `"summarizer":"llm"`) || !strings.Contains(string(r.LastCompaction.Details), `"calls":`) {
				t.Fatalf("details: %s", r.LastCompaction.Details)
			}
			for _, q := range reqs {
				if q.Temperature == nil || *q.Temperature > 1e-6 {
					t.Fatalf("temperature %v", q.Temperature)
				}
			}
			switch strategy {
			case StrategySummarize:
				if len(reqs) != 1 || reqs[0].MaxTokens != 4096 {
					t.Fatalf("summarize: %d calls, max_tokens %d", len(reqs), reqs[0].MaxTokens)
				}
				user := reqs[0].Messages[len(reqs[0].Messages)-1].Content
				if n := u16len(user); n > DefaultMaxInputChars+5000 {
					t.Fatalf("summarizer input %d chars, cap is %d", n, DefaultMaxInputChars)
				}
				if !strings.Contains(user, "characters omitted") {
					t.Fatal("tool results were not previewed head+tail")
				}
			case StrategySafeguard:
				if !strings.Contains(r.LastCompaction.Summary, "## Recent turns preserved verbatim") {
					t.Fatal("no preserved turns")
				}
				if u16len(r.LastCompaction.Summary) > MaxSummaryChars {
					t.Fatalf("summary %d chars > 16000", u16len(r.LastCompaction.Summary))
				}
				if !strings.Contains(reqs[0].Messages[1].Content, "## Exact identifiers") {
					t.Fatal("required sections not asked for")
				}
			case StrategyDefault:
				asked := false
				for _, q := range reqs {
					asked = asked || strings.Contains(q.Messages[1].Content, "## Goal")
				}
				if !asked {
					t.Fatal("checkpoint headings not asked for")
				}
			}
			t.Logf("%s: %d calls, %d input tokens, %d output tokens, %d → %d", strategy, res.LLMCalls, res.LLMInputTokens, res.LLMOutputTokens, res.TokensBefore, res.TokensAfter)
		})
	}
}

func TestLLMQualityGuardAsksAgain(t *testing.T) {
	srv := llmtest.New()
	defer srv.Close()
	srv.Reply = func(llmtest.Request) string { return "## Decisions\n- nothing was decided" } // misses 4 headings
	file := testkit.CopyToTemp(t, scenarios(t)["tool-dense"])
	res, err := CompactFile(context.Background(), file, Options{Settings: Settings{Strategy: StrategySafeguard, Force: true, KeepRecentTokens: 3000,
		QualityGuard: true, QualityGuardRetries: 2, RecentTurnsPreserve: -1}, Summarizer: llmSummarizer(t, srv, nil)})
	if err != nil {
		t.Fatal(err)
	}
	o := res.Outcome()
	if o.QualityRetries != 2 || len(o.QualityIssues) == 0 {
		t.Fatalf("quality retries %d, issues %v", o.QualityRetries, o.QualityIssues)
	}
	reqs := srv.Requests()
	last := reqs[len(reqs)-1].Messages[1].Content
	if !strings.Contains(last, "was rejected because") {
		t.Fatal("feedback not sent on the retry")
	}
}

func TestLLMRetryAfterThenSuccess(t *testing.T) {
	srv := llmtest.New(llmtest.Step{Status: http.StatusTooManyRequests, RetryAfter: "1"})
	defer srv.Close()
	file := testkit.CopyToTemp(t, scenarios(t)["branches"])
	start := time.Now()
	res, err := CompactFile(context.Background(), file, Options{Settings: Settings{Force: true, KeepRecentTokens: 3000}, Summarizer: llmSummarizer(t, srv, nil)})
	if err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	gap := time.Duration(0)
	for i := 1; i < len(reqs); i++ {
		if d := reqs[i].At.Sub(reqs[i-1].At); d > gap {
			gap = d
		}
	}
	if !res.Compacted || len(reqs) != res.LLMCalls+1 || gap < 900*time.Millisecond || time.Since(start) < time.Second {
		t.Fatalf("compacted %v, %d requests for %d calls, largest gap %s", res.Compacted, len(reqs), res.LLMCalls, gap)
	}
}

func TestLLMServerErrorThenSuccess(t *testing.T) {
	srv := llmtest.New(llmtest.Step{Status: 500}, llmtest.Step{Status: 502})
	defer srv.Close()
	file := testkit.CopyToTemp(t, scenarios(t)["branches"])
	res, err := CompactFile(context.Background(), file, Options{Settings: Settings{Force: true, KeepRecentTokens: 3000}, Summarizer: llmSummarizer(t, srv, nil)})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Compacted || len(srv.Requests()) != 3+res.LLMCalls-1 {
		t.Fatalf("compacted %v, %d requests for %d calls", res.Compacted, len(srv.Requests()), res.LLMCalls)
	}
}

// failureLeavesFileAlone runs a compaction that must fail and checks the
// file is byte-identical and unlocked afterwards.
func failureLeavesFileAlone(t *testing.T, srv *llmtest.Server, set Settings, mut func(*llm.Config), want string) {
	t.Helper()
	file := testkit.CopyToTemp(t, scenarios(t)["branches"])
	orig, _ := os.ReadFile(file)
	res, err := CompactFile(context.Background(), file, Options{Settings: set, Summarizer: llmSummarizer(t, srv, mut)})
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want %q", err, want)
	}
	if res == nil || res.Compacted || res.Error == "" {
		t.Fatalf("result %+v", res)
	}
	untouched(t, file, orig, "a failed compaction")
}

func TestLLMTimeoutWritesNothing(t *testing.T) {
	srv := llmtest.New()
	srv.Always = llmtest.Step{Delay: 3 * time.Second}
	defer srv.Close()
	failureLeavesFileAlone(t, srv, Settings{Force: true, KeepRecentTokens: 3000}, func(c *llm.Config) {
		c.Timeout, c.MaxRetries = 200*time.Millisecond, 1
	}, "no answer within 200ms")
}

func TestLLMPermanentFailureWritesNothing(t *testing.T) {
	srv := llmtest.New()
	srv.Always = llmtest.Step{Status: 401}
	defer srv.Close()
	failureLeavesFileAlone(t, srv, Settings{Force: true, KeepRecentTokens: 3000}, nil, "401")
	if n := len(srv.Requests()); n < 1 || n > 2 {
		t.Fatalf("%d requests for a permanent failure", n)
	}
	// summarize with fallback=fail behaves the same
	failureLeavesFileAlone(t, srv, Settings{Strategy: StrategySummarize, Force: true, SummarizeFallback: "fail", ProtectedTail: 6}, nil, "401")
}

func TestLLMEmptyAnswerWritesNothing(t *testing.T) {
	srv := llmtest.New()
	srv.Always = llmtest.Step{Empty: true}
	defer srv.Close()
	failureLeavesFileAlone(t, srv, Settings{Strategy: StrategySafeguard, Force: true, KeepRecentTokens: 3000}, nil, "empty answer")
}

func TestSummarizeFallsBackToTrimNote(t *testing.T) {
	oracle.Require(t)
	srv := llmtest.New()
	srv.Always = llmtest.Step{Status: 503}
	defer srv.Close()
	file := testkit.CopyToTemp(t, scenarios(t)["branches"])
	orig, _ := os.ReadFile(file)
	before := oracle.CheckOne(t, file)
	res, err := CompactFile(context.Background(), file, Options{Settings: Settings{Strategy: StrategySummarize, Force: true},
		Summarizer: llmSummarizer(t, srv, func(c *llm.Config) { c.MaxRetries = 1 })})
	if err != nil {
		t.Fatal(err)
	}
	if res.Fallback == "" || !res.Compacted {
		t.Fatalf("no fallback: %+v", res)
	}
	r := checkWritten(t, orig, before, file, res, false)
	if !strings.Contains(r.LastCompaction.Summary, "The summariser failed") || !strings.Contains(r.LastCompaction.Summary, originalHeading) {
		t.Fatalf("summary: %.300s", r.LastCompaction.Summary)
	}
}

// The identifier guard: a model summary that drops identifiers of the
// region is asked for once more with the list; the second answer, which
// copies them, is the one written, and the audit says so.
func TestIdentifierRetryListsTheDroppedIdentifiers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	planted := factgen.Write(t, path, factgen.Options{Seed: 5, Turns: 24, FactsWithin: 0.5})
	var ids []string
	for _, p := range planted {
		if p.Class == "identifier" {
			ids = append(ids, p.Probe)
		}
	}
	srv := llmtest.New()
	defer srv.Close()
	srv.Reply = func(r llmtest.Request) string {
		user := r.Messages[len(r.Messages)-1].Content
		if i := strings.Index(user, "dropped identifiers the agent needs"); i >= 0 {
			// copy back what the retry asks for
			return "## Goal\n- continue\n\n## Critical Context\n- " + user[i:]
		}
		return "## Goal\n- continue the work"
	}
	res, err := CompactFile(context.Background(), path, Options{Settings: Settings{Force: true, KeepRecentTokens: 8000, IdentifierRetry: true},
		Summarizer: llmSummarizer(t, srv, nil)})
	if err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	var retry string
	for _, r := range reqs {
		if u := r.Messages[len(r.Messages)-1].Content; strings.Contains(u, "dropped identifiers the agent needs") {
			retry = u
		}
	}
	if res.QualityRetries != 1 || retry == "" {
		t.Fatalf("retries %d; requests %d", res.QualityRetries, len(reqs))
	}
	for _, id := range ids {
		if !strings.Contains(retry, id) {
			t.Errorf("the retry does not list planted identifier %s", id)
		}
	}
	for _, f := range res.Audit.Dropped {
		for _, id := range ids {
			if f.Value == id {
				t.Errorf("planted identifier %s still dropped after the retry", id)
			}
		}
	}
	// without the guard: one attempt, identifiers dropped
	path2 := filepath.Join(t.TempDir(), "s.jsonl")
	factgen.Write(t, path2, factgen.Options{Seed: 5, Turns: 24, FactsWithin: 0.5})
	res2, err := CompactFile(context.Background(), path2, Options{Settings: Settings{Force: true, KeepRecentTokens: 8000},
		Summarizer: llmSummarizer(t, srv, nil)})
	if err != nil || res2.QualityRetries != 0 || res2.Audit.DroppedByClass["identifier"] == 0 {
		t.Fatalf("without the guard: %v, retries %d, audit %+v", err, res2.QualityRetries, res2.Audit.DroppedByClass)
	}
}
