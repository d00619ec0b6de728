package recall_test

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/testkit/recalltest"
	"github.com/ctxtool/ctxtool/pkg/recall"
)

// fakeEmbeddings is an OpenAI-compatible /embeddings endpoint whose vectors
// are hashed bags of words (64 dims): texts sharing words are similar. It
// answers 429 to the first request and to every request while down is set.
type fakeEmbeddings struct {
	srv      *httptest.Server
	requests atomic.Int64
	texts    atomic.Int64
	down     atomic.Bool
}

func newFakeEmbeddings(t *testing.T) *fakeEmbeddings {
	f := &fakeEmbeddings{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := f.requests.Add(1)
		if r.URL.Path != "/v1/embeddings" || r.Header.Get("Authorization") != "Bearer test-key" {
			http.Error(w, `{"error":{"message":"bad path or key"}}`, http.StatusUnauthorized)
			return
		}
		if n == 1 || f.down.Load() {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			w.Write([]byte(`{"error":{"message":"rate limited","type":"rate_limit"}}`))
			return
		}
		var req struct {
			Input []string `json:"input"`
			Model string   `json:"model"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != "test-embed" {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		f.texts.Add(int64(len(req.Input)))
		type item struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		resp := struct {
			Object string `json:"object"`
			Data   []item `json:"data"`
			Model  string `json:"model"`
		}{Object: "list", Model: req.Model}
		for i, in := range req.Input {
			resp.Data = append(resp.Data, item{"embedding", i, bagVector(in)})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(resp)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func bagVector(s string) []float32 {
	v := make([]float32, 64)
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	}) {
		h := fnv.New32a()
		h.Write([]byte(w))
		v[h.Sum32()%64]++
	}
	return v
}

func (f *fakeEmbeddings) embedder(t *testing.T) recall.Embedder {
	e, err := recall.NewOpenAIEmbedder(recall.EmbedderConfig{BaseURL: f.srv.URL + "/v1", APIKey: "test-key",
		Model: "test-embed", MaxRetries: 3, Backoff: time.Millisecond, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestHybridSearch(t *testing.T) { eachBackend(t, testHybridSearch) }

func testHybridSearch(t *testing.T, k kit) {
	dir := t.TempDir()
	facts := genSessions(t, dir, 2, 60)
	files := sessionFiles(t, dir)
	fake := newFakeEmbeddings(t)
	ix := k.open(t, recall.WithEmbedder(fake.embedder(t)))
	stats := indexAll(t, ix, files...)
	chunks := 0
	for _, st := range stats {
		if st.Embedded != st.Chunks || st.Chunks == 0 {
			t.Fatalf("embedded %d of %d chunks", st.Embedded, st.Chunks)
		}
		chunks += st.Chunks
	}
	if fake.requests.Load() < 2 {
		t.Fatal("the 429 was not retried")
	}
	// Unchanged files: no embedding calls.
	before := fake.texts.Load()
	indexAll(t, ix, files...)
	if fake.texts.Load() != before {
		t.Fatalf("second run embedded %d texts", fake.texts.Load()-before)
	}
	for _, f := range facts {
		if strings.HasPrefix(f.Name, "cjk") {
			continue // the bag-of-words fake knows no CJK
		}
		res, err := ix.Search(context.Background(), f.Query, recall.SearchOptions{MinScore: 0.35})
		if err != nil {
			t.Fatal(err)
		}
		if res.Mode != "hybrid" {
			t.Fatalf("mode %q fallback %q", res.Mode, res.Fallback)
		}
		if r := rankOf(res.Hits, f); r == 0 || r > 3 {
			t.Errorf("hybrid: fact %s query %q rank %d", f.Name, f.Query, r)
		}
	}
	// Endpoint down at query time: keyword results, with the reason.
	fake.down.Store(true)
	res, err := ix.Search(context.Background(), facts[0].Query, recall.SearchOptions{MinScore: 0.35})
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != "fts-only" || res.Fallback == "" || rankOf(res.Hits, facts[0]) != 1 {
		t.Errorf("fallback: mode %q fallback %q hits %d", res.Mode, res.Fallback, len(res.Hits))
	}
}

func TestEmbeddingsBackfill(t *testing.T) { eachBackend(t, testEmbeddingsBackfill) }

func testEmbeddingsBackfill(t *testing.T, k kit) {
	p := recalltest.TempFile(t, "s.jsonl", recalltest.Options{Seed: 3, Turns: 30})
	state := k.location(t)
	ix, err := recall.OpenURL(state)
	if err != nil {
		t.Fatal(err)
	}
	st, err := ix.Index(context.Background(), p)
	ix.Close()
	if err != nil || st.Embedded != 0 {
		t.Fatalf("keyword-only index: %+v %v", st, err)
	}
	// Embeddings configured later: the unchanged file gets its vectors.
	fake := newFakeEmbeddings(t)
	ix, err = recall.OpenURL(state, recall.WithEmbedder(fake.embedder(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	st2, err := ix.Index(context.Background(), p)
	if err != nil || st2.Skipped != "unchanged" || st2.Embedded != st.Chunks {
		t.Fatalf("backfill: %+v %v (chunks %d)", st2, err, st.Chunks)
	}
}

func TestEmbedderErrors(t *testing.T) {
	fake := newFakeEmbeddings(t)
	fake.down.Store(true)
	e := fake.embedder(t)
	start := time.Now()
	if _, err := e.Embed(context.Background(), []string{"x"}); err == nil || !strings.Contains(err.Error(), "429") && !strings.Contains(err.Error(), "rate limited") {
		t.Fatalf("want a rate-limit error, got %v", err)
	}
	if got := fake.requests.Load(); got != 4 {
		t.Errorf("requests = %d, want 1 + 3 retries", got)
	}
	if time.Since(start) > 2*time.Second {
		t.Error("backoff too long for the configured 1ms base")
	}
	if _, err := recall.NewOpenAIEmbedder(recall.EmbedderConfig{}); err == nil {
		t.Error("no model accepted")
	}
}
