package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/testkit/llmtest"
)

// fakeSleep records waits instead of sleeping.
func newTestClient(t *testing.T, srv *llmtest.Server, cfg Config) (*Client, *[]time.Duration) {
	t.Helper()
	cfg.BaseURL = srv.BaseURL()
	if cfg.Model == "" {
		cfg.Model = "test-model"
	}
	cfg.APIKey = "sk-test"
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var waits []time.Duration
	c.sleep = func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		return ctx.Err()
	}
	c.rnd = func() float64 { return 0.5 } // no jitter: exact backoff
	return c, &waits
}

func TestCompleteSuccess(t *testing.T) {
	srv := llmtest.New()
	defer srv.Close()
	srv.Reply = func(r llmtest.Request) string { return "  the summary  " }
	c, _ := newTestClient(t, srv, Config{})
	got, err := c.Complete(context.Background(), Request{System: "sys", User: "hello world", MaxTokens: 4096})
	if err != nil {
		t.Fatal(err)
	}
	if got.Text != "the summary" || got.Attempts != 1 || got.InputTokens == 0 || got.OutputTokens == 0 {
		t.Fatalf("got %+v", got)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || reqs[0].Auth != "Bearer sk-test" || reqs[0].MaxTokens != 4096 || len(reqs[0].Messages) != 2 {
		t.Fatalf("server saw %+v", reqs)
	}
	// Temperature 0 must reach the server (go-openai drops a plain 0).
	if reqs[0].Temperature == nil || *reqs[0].Temperature > 1e-6 {
		t.Fatalf("temperature not sent as ~0: %v", reqs[0].Temperature)
	}
	if s := c.Stats(); s.Calls != 1 || s.Attempts != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestRetryAfterIsHonoured(t *testing.T) {
	srv := llmtest.New(llmtest.Step{Status: 429, RetryAfter: "3"})
	defer srv.Close()
	c, waits := newTestClient(t, srv, Config{MaxRetries: 3, MinBackoff: 100 * time.Millisecond})
	got, err := c.Complete(context.Background(), Request{User: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Attempts != 2 || len(*waits) != 1 || (*waits)[0] != 3*time.Second {
		t.Fatalf("attempts %d waits %v; want 2 attempts and one 3s wait", got.Attempts, *waits)
	}
}

func TestServerErrorThenSuccessBacksOff(t *testing.T) {
	srv := llmtest.New(llmtest.Step{Status: 500}, llmtest.Step{Status: 503})
	defer srv.Close()
	c, waits := newTestClient(t, srv, Config{MaxRetries: 4, MinBackoff: 100 * time.Millisecond})
	got, err := c.Complete(context.Background(), Request{User: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Attempts != 3 {
		t.Fatalf("attempts %d", got.Attempts)
	}
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}
	if len(*waits) != 2 || (*waits)[0] != want[0] || (*waits)[1] != want[1] {
		t.Fatalf("waits %v, want %v", *waits, want)
	}
}

func TestJitterStaysWithinTwentyPercent(t *testing.T) {
	c := &Client{cfg: Config{MinBackoff: time.Second, MaxBackoff: 4 * time.Second}}
	for _, r := range []float64{0, 0.999} {
		c.rnd = func() float64 { return r }
		for a := 1; a <= 5; a++ {
			d := c.backoff(a)
			base := time.Second << (a - 1)
			if base > 4*time.Second {
				base = 4 * time.Second
			}
			if d < base*8/10 || d > base*12/10 {
				t.Fatalf("attempt %d: %s outside ±20%% of %s", a, d, base)
			}
		}
	}
}

func TestPerCallTimeoutIsRetriedThenGivesUp(t *testing.T) {
	srv := llmtest.New()
	srv.Always = llmtest.Step{Delay: 2 * time.Second}
	defer srv.Close()
	c, waits := newTestClient(t, srv, Config{MaxRetries: 1, Timeout: 100 * time.Millisecond, MinBackoff: time.Millisecond})
	start := time.Now()
	_, err := c.Complete(context.Background(), Request{User: "x"})
	if err == nil || !strings.Contains(err.Error(), "no answer within 100ms") || !strings.Contains(err.Error(), "gave up after 2 attempts") {
		t.Fatalf("err = %v", err)
	}
	if len(*waits) != 1 || time.Since(start) > 1500*time.Millisecond {
		t.Fatalf("waits %v elapsed %s", *waits, time.Since(start))
	}
}

func TestOverallDeadlineStopsRetries(t *testing.T) {
	srv := llmtest.New()
	srv.Always = llmtest.Step{Status: 503, RetryAfter: "5"}
	defer srv.Close()
	c, _ := newTestClient(t, srv, Config{MaxRetries: 10})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := c.Complete(ctx, Request{User: "x"})
	if err == nil || !strings.Contains(err.Error(), "overall deadline") {
		t.Fatalf("err = %v", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("%d requests; the deadline should stop it after the first", n)
	}
}

func TestPermanentFailureIsNotRetried(t *testing.T) {
	srv := llmtest.New()
	srv.Always = llmtest.Step{Status: 401}
	defer srv.Close()
	c, waits := newTestClient(t, srv, Config{MaxRetries: 5})
	_, err := c.Complete(context.Background(), Request{User: "x"})
	if err == nil || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Fatalf("err = %v", err)
	}
	if len(srv.Requests()) != 1 || len(*waits) != 0 {
		t.Fatalf("retried a 401: %d requests", len(srv.Requests()))
	}
}

func TestEmptyAnswerIsAnError(t *testing.T) {
	srv := llmtest.New(llmtest.Step{Empty: true})
	defer srv.Close()
	c, _ := newTestClient(t, srv, Config{MaxRetries: 3})
	if _, err := c.Complete(context.Background(), Request{User: "x"}); err == nil || !strings.Contains(err.Error(), "empty answer") {
		t.Fatalf("err = %v", err)
	}
}

func TestRetryAfterLongerThanWeWaitFails(t *testing.T) {
	srv := llmtest.New(llmtest.Step{Status: 429, RetryAfter: "3600"})
	defer srv.Close()
	c, _ := newTestClient(t, srv, Config{MaxRetries: 3})
	if _, err := c.Complete(context.Background(), Request{User: "x"}); err == nil || !strings.Contains(err.Error(), "retry after") {
		t.Fatalf("err = %v", err)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if d, ok := parseRetryAfter("2.5", now); !ok || d != 2500*time.Millisecond {
		t.Fatal(d, ok)
	}
	if d, ok := parseRetryAfter("Thu, 01 Jan 2026 00:00:07 GMT", now); !ok || d != 7*time.Second {
		t.Fatal(d, ok)
	}
	if _, ok := parseRetryAfter("soon", now); ok {
		t.Fatal("parsed garbage")
	}
}

func TestReasoningModelsGetMaxCompletionTokens(t *testing.T) {
	srv := llmtest.New()
	defer srv.Close()
	c, _ := newTestClient(t, srv, Config{Model: "o3-mini"})
	if _, err := c.Complete(context.Background(), Request{User: "x", MaxTokens: 100}); err != nil {
		t.Fatal(err)
	}
	if r := srv.Requests()[0]; r.MaxTokens != 0 || r.Temperature != nil {
		t.Fatalf("sent max_tokens/temperature to a reasoning model: %+v", r)
	}
}

// A reasoning-model endpoint rejects max_tokens: the client switches to
// max_completion_tokens (and stops sending a temperature when that is
// rejected too) after one rejected request, and keeps the learnt fields for
// the rest of the run.
func TestLearnsMaxCompletionTokensOncePerRun(t *testing.T) {
	srv := llmtest.New()
	defer srv.Close()
	srv.Reject = []string{"max_tokens", "temperature"}
	var logs []string
	c, _ := newTestClient(t, srv, Config{Model: "company-reasoner", Logf: func(f string, a ...any) { logs = append(logs, f) }})
	for i := 0; i < 3; i++ {
		if _, err := c.Complete(context.Background(), Request{User: "hi", MaxTokens: 500}); err != nil {
			t.Fatal(err)
		}
	}
	reqs := srv.Requests()
	// call 1: max_tokens (400), then max_completion_tokens + temperature
	// (400), then without temperature; calls 2 and 3 go straight through
	if len(reqs) != 5 {
		t.Fatalf("%d requests, want 5 (3 for the first call, then 1 per call)", len(reqs))
	}
	for i, r := range reqs[2:] {
		if r.Sent["max_tokens"] || !r.Sent["max_completion_tokens"] || r.MaxCompletionTokens != 500 || r.Sent["temperature"] {
			t.Errorf("request %d after learning: fields %v", i+3, r.Sent)
		}
	}
	if len(logs) != 2 {
		t.Errorf("want one log line per thing learnt, got %q", logs)
	}
	if s := c.Stats(); s.Calls != 3 {
		t.Errorf("stats %+v", s)
	}
}

// An older server rejects max_completion_tokens (what ctxtool sends first
// to api.openai.com): the client falls back to max_tokens.
func TestFallsBackToMaxTokens(t *testing.T) {
	srv := llmtest.New()
	defer srv.Close()
	srv.Reject = []string{"max_completion_tokens"}
	c, _ := newTestClient(t, srv, Config{Model: "gpt-4o-mini"})
	c.params = params{known: true, completionTokens: true} // as firstGuess for api.openai.com
	for i := 0; i < 2; i++ {
		if _, err := c.Complete(context.Background(), Request{User: "hi", MaxTokens: 300}); err != nil {
			t.Fatal(err)
		}
	}
	reqs := srv.Requests()
	if len(reqs) != 3 || !reqs[0].Sent["max_completion_tokens"] || reqs[1].MaxTokens != 300 || reqs[2].MaxTokens != 300 || reqs[2].Sent["max_completion_tokens"] {
		t.Fatalf("requests: %+v", reqs)
	}
}

// A 400 that is not about a field is not retried and names the flag to
// check.
func TestBadRequestNamesTheModelFlag(t *testing.T) {
	srv := llmtest.New(llmtest.Step{Status: 400, Body: `{"error":{"message":"model not available","type":"invalid_request_error"}}`})
	defer srv.Close()
	c, _ := newTestClient(t, srv, Config{})
	_, err := c.Complete(context.Background(), Request{User: "hi", MaxTokens: 10})
	if err == nil || !strings.Contains(err.Error(), "--llm-model") || len(srv.Requests()) != 1 {
		t.Fatalf("err %v after %d requests", err, len(srv.Requests()))
	}
	if _, err := New(Config{}); err == nil || !strings.Contains(err.Error(), "--llm-model") {
		t.Fatalf("New without a model: %v", err)
	}
}

func TestBackoffAndRetryable(t *testing.T) {
	min, max := 500*time.Millisecond, 30*time.Second
	if got := Backoff(1, min, max, 0.5); got != min {
		t.Errorf("attempt 1: %s", got)
	}
	if got := Backoff(3, min, max, 0.5); got != 2*time.Second {
		t.Errorf("attempt 3: %s", got)
	}
	if got := Backoff(20, min, max, 0.999); got > max*12/10 || got < max {
		t.Errorf("attempt 20 with jitter: %s", got)
	}
	if got := Backoff(2, min, max, 0); got != 800*time.Millisecond {
		t.Errorf("jitter floor: %s", got)
	}
	for status, want := range map[int]bool{429: true, 500: true, 503: true, 400: false, 401: false, 404: false} {
		if Retryable(status, nil) != want {
			t.Errorf("Retryable(%d) = %v", status, !want)
		}
	}
}

// Embed goes through the same retry policy as Complete (a 503 and a 429
// with Retry-After are retried) and puts vectors back in input order.
func TestEmbedRetriesAndOrders(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/embeddings" {
			http.NotFound(w, r)
			return
		}
		switch calls.Add(1) {
		case 1:
			http.Error(w, `{"error":{"message":"busy"}}`, http.StatusServiceUnavailable)
			return
		case 2:
			w.Header().Set("Retry-After", "0")
			http.Error(w, `{"error":{"message":"slow down"}}`, http.StatusTooManyRequests)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"object":"list","model":"emb","data":[
			{"object":"embedding","index":1,"embedding":[0,1]},
			{"object":"embedding","index":0,"embedding":[1,0]}]}`)
	}))
	defer srv.Close()
	c, err := New(Config{BaseURL: srv.URL + "/v1", Model: "emb", MaxRetries: 3, MinBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	vecs, err := c.Embed(context.Background(), []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 3 || c.Stats().Attempts != 3 {
		t.Errorf("calls %d, attempts %d: want 3 (two retries)", calls.Load(), c.Stats().Attempts)
	}
	if len(vecs) != 2 || vecs[0][0] != 1 || vecs[1][1] != 1 {
		t.Errorf("vectors out of order: %v", vecs)
	}
	c2, _ := New(Config{BaseURL: srv.URL + "/v1", Model: "emb", MaxRetries: 0})
	calls.Store(0)
	if _, err := c2.Embed(context.Background(), []string{"a"}); err == nil || calls.Load() != 1 {
		t.Errorf("MaxRetries 0: err %v after %d calls", err, calls.Load())
	}
}

// A connection that breaks before or during the answer is retried, decided
// by the error's type: each case fails on the first attempt and the second
// succeeds. The truncated body (io.ErrUnexpectedEOF from go-openai's
// decoder) is not a net.Error, so only the typed check catches it.
func TestBrokenConnectionIsRetried(t *testing.T) {
	for name, breakConn := range map[string]func(t *testing.T, w http.ResponseWriter){
		"closed before the answer": func(t *testing.T, w http.ResponseWriter) { hijack(t, w).Close() },
		"closed mid-body": func(t *testing.T, w http.ResponseWriter) {
			conn := hijack(t, w)
			fmt.Fprint(conn, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{\"id\":\"x\",\"choices\":[")
			conn.Close()
		},
		"reset": func(t *testing.T, w http.ResponseWriter) {
			conn := hijack(t, w)
			conn.(*net.TCPConn).SetLinger(0) // close sends RST
			conn.Close()
		},
	} {
		t.Run(name, func(t *testing.T) {
			srv := llmtest.New()
			defer srv.Close()
			var calls atomic.Int32
			next := srv.Config.Handler
			srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if calls.Add(1) == 1 {
					breakConn(t, w)
					return
				}
				next.ServeHTTP(w, r)
			})
			c, _ := newTestClient(t, srv, Config{MaxRetries: 2, MinBackoff: time.Millisecond})
			got, err := c.Complete(context.Background(), Request{User: "x"})
			if err != nil {
				t.Fatalf("not retried: %v", err)
			}
			if got.Attempts != 2 {
				t.Fatalf("attempts %d, want 2", got.Attempts)
			}
		})
	}
}

func hijack(t *testing.T, w http.ResponseWriter) net.Conn {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

// The classification itself, on the errors the transport and go-openai
// return (wrapped as url.Error and fmt %w do), and on ones it must not retry.
func TestIsNetErrByType(t *testing.T) {
	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	for err, want := range map[error]bool{
		io.EOF:              true,
		io.ErrUnexpectedEOF: true,
		fmt.Errorf("error, reading response body: %w", io.ErrUnexpectedEOF): true,
		&url.Error{Op: "Post", URL: "http://x", Err: io.EOF}:                true,
		reset: true,
		fmt.Errorf("wrapped: %w", syscall.ECONNRESET):         true,
		errors.New("invalid character 'x' looking for value"): false,
		&json.SyntaxError{}: false,
	} {
		if got := isNetErr(err); got != want {
			t.Errorf("isNetErr(%v) = %v, want %v", err, got, want)
		}
	}
}
