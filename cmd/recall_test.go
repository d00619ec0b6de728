package cmd

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// Every command that uses the recall index resolves the same settings the
// same way: --state-dir and --index beat the config, a command without
// --index (compact) reads recall.url from the config, and an embedder that
// cannot be built stops the command (exit 2) exactly where the command
// would use it: always for index and search, only with semantic history
// on for budget, only with recall enabled for roll, only for a real
// --truncate for compact.
func TestRecallSettingsPerCommand(t *testing.T) {
	cleanEnv(t)
	t.Setenv("CTXTOOL_STATE_DIR", "")
	good := configFile(t, "stateDir: /cfg/st\nrecall:\n  url: /cfg/ix.sqlite\n  toolOutputChars: 123\n")
	t.Run("flags beat config", func(t *testing.T) {
		o, code := resolve(t, newIndexCmd, "--config", good, "--state-dir", "/fl/st", "index", "--index", "/fl/ix.sqlite", "d")
		if code != 0 || o.Recall.StateDir != "/fl/st" || o.Recall.URL != "/fl/ix.sqlite" || o.Recall.MaxChars != 123 || o.Recall.Embedder != nil {
			t.Fatalf("index: exit %d, %+v", code, o.Recall)
		}
		s, code := resolve(t, newSearchCmd, "--config", good, "search", "q")
		if code != 0 || s.Recall.StateDir != "/cfg/st" || s.Recall.URL != "/cfg/ix.sqlite" {
			t.Fatalf("search: exit %d, %+v", code, s.Recall)
		}
		r, code := resolve(t, newRollCmd, "--config", good, "--state-dir", "/fl/st", "roll", "--index", "/fl/ix.sqlite", "d")
		if code != 0 || !r.RecallEnabled || r.Recall.StateDir != "/fl/st" || r.Recall.URL != "/fl/ix.sqlite" || r.Recall.MaxChars != 123 {
			t.Fatalf("roll: exit %d, %+v", code, r.Recall)
		}
		b, code := resolve(t, newBudgetCmd, "--config", good, "--state-dir", "/fl/st", "budget", "--index", "/fl/ix.sqlite", "s.jsonl")
		if code != 0 || b.Recall.StateDir != "/fl/st" || b.Recall.URL != "/fl/ix.sqlite" || b.Recall.MaxChars != 123 {
			t.Fatalf("budget: exit %d, %+v", code, b.Recall)
		}
		c, code := resolve(t, newCompactCmd, "--config", good, "--state-dir", "/fl/st", "compact", "--truncate", "s.jsonl")
		if code != 0 || c.IndexBackup == nil {
			t.Fatalf("compact --truncate: exit %d, backup indexer %v", code, c.IndexBackup != nil)
		}
	})
	// A whitespace model name is set but cannot build a client.
	broken := configFile(t, "llm:\n  embeddingModel: \" \"\n")
	off := configFile(t, "recall:\n  enabled: false\nllm:\n  embeddingModel: \" \"\n")
	for _, tc := range []struct {
		name     string
		run      func(cfg string) int
		on, offc int // exit with recall enabled, disabled
	}{
		{"index", func(cfg string) int { _, c := resolve(t, newIndexCmd, "--config", cfg, "index", "d"); return c }, 2, 2},
		{"search", func(cfg string) int { _, c := resolve(t, newSearchCmd, "--config", cfg, "search", "q"); return c }, 2, 2},
		{"budget", func(cfg string) int { _, c := resolve(t, newBudgetCmd, "--config", cfg, "budget", "s.jsonl"); return c }, 2, 2},
		{"roll", func(cfg string) int { _, c := resolve(t, newRollCmd, "--config", cfg, "roll", "d"); return c }, 2, 0},
		{"compact --truncate", func(cfg string) int {
			_, c := resolve(t, newCompactCmd, "--config", cfg, "compact", "--truncate", "s.jsonl")
			return c
		}, 2, 0},
		{"compact --truncate --dry-run", func(cfg string) int {
			_, c := resolve(t, newCompactCmd, "--config", cfg, "compact", "--truncate", "--dry-run", "s.jsonl")
			return c
		}, 0, 0},
		{"compact", func(cfg string) int {
			_, c := resolve(t, newCompactCmd, "--config", cfg, "compact", "s.jsonl")
			return c
		}, 0, 0},
	} {
		if got := tc.run(broken); got != tc.on {
			t.Errorf("%s, broken embedder, recall enabled: exit %d, want %d", tc.name, got, tc.on)
		}
		if got := tc.run(off); got != tc.offc {
			t.Errorf("%s, broken embedder, recall disabled: exit %d, want %d", tc.name, got, tc.offc)
		}
	}
	// budget searches the index only for semantic history: with it off, a
	// broken embedder used to stop it anyway (exit 2).
	noSemantic := configFile(t, "contextManagement:\n  semanticHistory:\n    enabled: false\nllm:\n  embeddingModel: \" \"\n")
	if _, code := resolve(t, newBudgetCmd, "--config", noSemantic, "budget", "s.jsonl"); code != 0 {
		t.Errorf("budget without semantic history, broken embedder: exit %d, want 0", code)
	}
}

// Summaries and embeddings call the same endpoint: llm.baseURL and
// llm.apiKey, else OPENAI_BASE_URL and OPENAI_API_KEY (llmEndpoint); only
// the model differs. The embedder is checked by a request to a local
// server named only in the environment.
func TestSummariesAndEmbeddingsShareTheEndpoint(t *testing.T) {
	cleanEnv(t)
	var auth, path string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth, path = r.Header.Get("Authorization"), r.URL.Path
		fmt.Fprint(w, `{"object":"list","model":"e","data":[{"object":"embedding","index":0,"embedding":[0.5,0.5]}]}`)
	}))
	defer srv.Close()
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", "env-key")
	fromEnv := configFile(t, "llm:\n  model: m\n  embeddingModel: e\n  timeout: 7s\n  maxRetries: 5\n")
	fromFile := configFile(t, "llm:\n  model: m\n  baseURL: http://file.example/v1\n  apiKey: file-key\n")
	for _, tc := range []struct{ cfg, base, key string }{
		{fromEnv, srv.URL + "/v1", "env-key"},
		{fromFile, "http://file.example/v1", "file-key"},
	} {
		o, code := resolve(t, newCompactCmd, "--config", tc.cfg, "compact", "s.jsonl")
		if code != 0 || o.LLM.BaseURL != tc.base || o.LLM.APIKey != tc.key || o.LLM.Model != "m" {
			t.Fatalf("compact: exit %d, %+v", code, o.LLM)
		}
	}
	o, code := resolve(t, newCompactCmd, "--config", fromEnv, "compact", "s.jsonl")
	if code != 0 || o.LLM.Timeout != 7*time.Second || o.LLM.MaxRetries != 5 {
		t.Errorf("compact: exit %d, timeout %v, retries %d", code, o.LLM.Timeout, o.LLM.MaxRetries)
	}
	ix, code := resolve(t, newIndexCmd, "--config", fromEnv, "index", "d")
	if code != 0 || ix.Recall.Embedder == nil {
		t.Fatalf("index: exit %d, embedder %v", code, ix.Recall.Embedder)
	}
	if _, err := ix.Recall.Embedder.Embed(context.Background(), []string{"x"}); err != nil {
		t.Fatal(err)
	}
	if path != "/v1/embeddings" || auth != "Bearer env-key" {
		t.Errorf("embeddings went to %q with %q, want /v1/embeddings with the environment's key", path, auth)
	}
}
