package compaction

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/pkg/config"
	"github.com/ctxtool/ctxtool/pkg/llm"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// Every summariser the key table offers can be made, and every one that
// registers itself is offered: adding one is its file plus the Enum.
func TestEverySummarizerInTheKeyTableIsRegistered(t *testing.T) {
	k, ok := config.Lookup("compaction.summarizer")
	if !ok {
		t.Fatal("compaction.summarizer is not in the key table")
	}
	var offered []string
	for _, v := range k.Enum {
		if v != "auto" { // the command's pick between llm and extractive
			offered = append(offered, v)
		}
	}
	slices.Sort(offered)
	if got := summarizerNames(); !slices.Equal(got, offered) {
		t.Fatalf("registered summarisers %q, the key table offers %q (besides auto)", got, offered)
	}
}

func TestNewSummarizerTakesWhatItNeedsFromEnv(t *testing.T) {
	down := errors.New("no model configured")
	env := Env{Client: func() (*llm.Client, error) { return nil, down }, Deadline: 42 * time.Second}
	if s, err := NewSummarizer("extractive", env); err != nil || !s.Capabilities().Offline {
		t.Errorf("extractive: %v, %#v", err, s)
	}
	s, err := NewSummarizer("exec:  ./summarise --fast ", env)
	if e, ok := s.(*ExecSummarizer); err != nil || !ok || e.Command != "./summarise --fast" || e.Timeout != 42*time.Second {
		t.Errorf("exec: %v, %#v", err, s)
	}
	if _, err := NewSummarizer("llm", env); !errors.Is(err, down) {
		t.Errorf("llm without a client: %v, want the client's error", err)
	}
	c, err := llm.New(llm.Config{Model: "m", BaseURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	env.Client = func() (*llm.Client, error) { return c, nil }
	if s, err := NewSummarizer("llm", env); err != nil || s.Capabilities().Model != c || !s.Capabilities().Retries {
		t.Errorf("llm: %v, %#v", err, s)
	}
	if _, err := NewSummarizer("oracle", env); err == nil || !strings.Contains(err.Error(), "exec:, extractive, llm") {
		t.Errorf("an unknown summariser: %v", err)
	}
}

// strategies are the strategies the tests run every scenario with.
var strategies = []string{StrategyDefault, StrategySafeguard, StrategySummarize}

// The key table's compaction.mode values are the strategies this package
// implements, each dispatched to its own summariser calls; anything else
// is refused, by Validate and by Compact.
func TestEveryStrategyInTheKeyTableIsImplemented(t *testing.T) {
	k, _ := config.Lookup("compaction.mode")
	if !slices.Equal(k.Enum, strategies) {
		t.Fatalf("the key table offers %q, the package implements %q", k.Enum, strategies)
	}
	for _, st := range k.Enum {
		if err := (Settings{Strategy: st}).Validate(); err != nil || !implemented(st) {
			t.Errorf("%s: %v", st, err)
		}
	}
	if (Settings{}).Validate() != nil {
		t.Error("the empty strategy (the default) refused")
	}
	err := Settings{Strategy: "fast"}.Validate()
	if err == nil || !strings.Contains(err.Error(), `unknown strategy "fast"`) {
		t.Fatalf("an unknown strategy: %v", err)
	}
	file := filler(t, 8)
	s, err := transcript.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p, err := Prepare(s, Settings{Force: true, KeepRecentTokens: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Compact(context.Background(), s, p, Settings{Strategy: "fast", Force: true, KeepRecentTokens: 1000}, Extractive{}); err == nil || !strings.Contains(err.Error(), `unknown strategy "fast"`) {
		t.Fatalf("Compact with an unknown strategy: %v", err)
	}
}
