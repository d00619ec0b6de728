// Package llm is a small chat-completion and embeddings client for any OpenAI-compatible
// endpoint (OpenAI, vLLM, Ollama, LiteLLM, …) built on go-openai. It exists
// so that summarisation can survive real endpoints: every call has its own
// timeout, the whole job has a deadline, and 429/5xx answers and timeouts are
// retried with exponential backoff and jitter, honouring Retry-After.
//
// It must not know about sessions or summaries (callers build the prompts)
// and must never print or log the API key.
package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Config says where and how to call the endpoint.
type Config struct {
	// BaseURL is the API root including the version path, e.g.
	// https://api.openai.com/v1 or http://localhost:11434/v1.
	BaseURL string
	Model   string
	APIKey  string
	// Timeout bounds one HTTP call (0: 120 s).
	Timeout time.Duration
	// MaxRetries is how many times a transient failure is retried (so at
	// most MaxRetries+1 requests per completion). Negative means 0.
	MaxRetries int
	// MinBackoff and MaxBackoff bound the exponential backoff (defaults
	// 500 ms and 30 s). Retry-After from the server wins when it is larger,
	// up to MaxRetryAfter (default 60 s).
	MinBackoff, MaxBackoff, MaxRetryAfter time.Duration
	// HTTPClient is the transport to use (tests inject one); nil: default.
	HTTPClient *http.Client
	// Logf receives one line per retry; nil: silent.
	Logf func(format string, args ...any)
}

// Request is one chat completion.
type Request struct {
	System    string
	User      string
	MaxTokens int
	// Temperature 0 is sent as the smallest positive float: go-openai drops
	// a zero value from the JSON, and servers then use their default (~1).
	Temperature float32
}

// Completion is a successful answer.
type Completion struct {
	Text         string
	InputTokens  int
	OutputTokens int
	// Attempts is how many HTTP requests it took (1 = no retry).
	Attempts int
	Model    string
}

// Client calls one endpoint/model.
type Client struct {
	cfg Config
	api *openai.Client
	// sleep is time.Sleep with cancellation; tests may replace it.
	sleep func(ctx context.Context, d time.Duration) error
	rnd   func() float64

	mu    sync.Mutex
	stats Stats
	// params is what the endpoint accepts, learnt from its errors once per
	// client (one run): which name the output limit goes by, and whether a
	// temperature may be sent.
	params params
}

// params are the request fields an endpoint accepts.
type params struct {
	known bool
	// completionTokens sends max_completion_tokens (OpenAI's reasoning
	// models reject max_tokens) instead of max_tokens (all older
	// OpenAI-compatible servers).
	completionTokens bool
	noTemperature    bool
}

// Stats accumulates what a client did (for reporting).
type Stats struct {
	Calls        int // successful completions
	Attempts     int // HTTP requests sent
	InputTokens  int
	OutputTokens int
}

// New checks the configuration and builds a client.
func New(cfg Config) (*Client, error) {
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, errors.New("no model configured: pass --llm-model NAME (or set llm.model / CTXTOOL_LLM_MODEL)")
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = "https://api.openai.com/v1"
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 120 * time.Second
	}
	if cfg.MaxRetries < 0 {
		cfg.MaxRetries = 0
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = 500 * time.Millisecond
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = 30 * time.Second
	}
	if cfg.MaxRetryAfter <= 0 {
		cfg.MaxRetryAfter = 60 * time.Second
	}
	base := cfg.HTTPClient
	if base == nil {
		base = &http.Client{}
	}
	hc := *base
	hc.Transport = &headerRecorder{next: transportOf(base)}
	oc := openai.DefaultConfig(cfg.APIKey)
	oc.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	oc.HTTPClient = &hc
	return &Client{cfg: cfg, api: openai.NewClientWithConfig(oc), sleep: sleepCtx, rnd: rand.Float64}, nil
}

// Model is the configured model name.
func (c *Client) Model() string { return c.cfg.Model }

// Stats returns what the client did so far.
func (c *Client) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// Complete runs one chat completion with retries. The context carries the
// overall deadline; each attempt gets its own Timeout within it.
func (c *Client) Complete(ctx context.Context, r Request) (*Completion, error) {
	var resp openai.ChatCompletionResponse
	adapted := 0
	attempts, err := c.do(ctx, func(callCtx context.Context) error {
		for {
			var err error
			resp, err = c.api.CreateChatCompletion(callCtx, c.chatRequest(r))
			if err != nil && statusOf(err) == http.StatusBadRequest && adapted < 2 && c.adapt(err) {
				// the endpoint named a field it does not take: send the
				// other one at once (not a retry), and from now on
				adapted++
				continue
			}
			return err
		}
	})
	if err != nil {
		return nil, err
	}
	text := ""
	if len(resp.Choices) > 0 {
		text = strings.TrimSpace(resp.Choices[0].Message.Content)
	}
	if text == "" {
		// An empty answer is a failure we do not retry: the same
		// prompt would most likely give the same nothing.
		reason := ""
		if len(resp.Choices) > 0 {
			reason = " (finish_reason " + string(resp.Choices[0].FinishReason) + ")"
		}
		return nil, fmt.Errorf("%s: the model returned an empty answer%s", c.cfg.Model, reason)
	}
	c.count(func(s *Stats) {
		s.Calls++
		s.InputTokens += resp.Usage.PromptTokens
		s.OutputTokens += resp.Usage.CompletionTokens
	})
	return &Completion{Text: text, InputTokens: resp.Usage.PromptTokens, OutputTokens: resp.Usage.CompletionTokens,
		Attempts: attempts, Model: resp.Model}, nil
}

// Embed returns the embeddings of texts from the configured model (POST
// /embeddings), in order, with the same retry policy as Complete.
func (c *Client) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	var resp openai.EmbeddingResponse
	_, err := c.do(ctx, func(callCtx context.Context) error {
		var err error
		resp, err = c.api.CreateEmbeddings(callCtx, openai.EmbeddingRequest{Input: texts, Model: openai.EmbeddingModel(c.cfg.Model)})
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(resp.Data) != len(texts) {
		return nil, fmt.Errorf("%s at %s: the embeddings endpoint returned %d vectors for %d texts", c.cfg.Model, c.cfg.BaseURL, len(resp.Data), len(texts))
	}
	vecs := make([][]float32, len(texts))
	for _, d := range resp.Data {
		if d.Index < 0 || d.Index >= len(texts) {
			return nil, fmt.Errorf("%s at %s: the embeddings endpoint returned index %d for %d texts", c.cfg.Model, c.cfg.BaseURL, d.Index, len(texts))
		}
		vecs[d.Index] = d.Embedding
	}
	c.count(func(s *Stats) { s.Calls++ })
	return vecs, nil
}

// do is ctxtool's one retry policy for network calls: call runs with its
// own Timeout inside ctx (the overall deadline); 429, 5xx, timeouts and
// dropped connections are retried up to MaxRetries times with exponential
// backoff and jitter, honouring Retry-After; other failures end at once.
// It returns the number of attempts made.
func (c *Client) do(ctx context.Context, call func(ctx context.Context) error) (int, error) {
	var lastErr error
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return attempt - 1, c.deadlineErr(err, lastErr)
		}
		rec := &recorded{}
		callCtx, cancel := context.WithTimeout(context.WithValue(ctx, recorderKey{}, rec), c.cfg.Timeout)
		err := call(callCtx)
		timedOut := callCtx.Err() == context.DeadlineExceeded && ctx.Err() == nil
		cancel()
		c.count(func(s *Stats) { s.Attempts++ })
		if err == nil {
			return attempt, nil
		}
		if ctx.Err() != nil {
			return attempt, c.deadlineErr(ctx.Err(), err)
		}
		status := statusOf(err)
		retryable := timedOut || Retryable(status, err)
		if timedOut {
			err = fmt.Errorf("no answer within %s (llm.timeout)", c.cfg.Timeout)
		}
		lastErr = describe(c.cfg, err, status)
		if !retryable || attempt > c.cfg.MaxRetries {
			if retryable {
				return attempt, fmt.Errorf("%w (gave up after %d attempts)", lastErr, attempt)
			}
			return attempt, lastErr
		}
		wait := c.backoff(attempt)
		if ra, ok := rec.retryAfter(); ok {
			if ra > c.cfg.MaxRetryAfter {
				return attempt, fmt.Errorf("%w; the server asks to retry after %s, longer than ctxtool waits (%s)", lastErr, ra, c.cfg.MaxRetryAfter)
			}
			if ra > wait {
				wait = ra
			}
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return attempt, fmt.Errorf("%w; not retrying: the next attempt (in %s) would pass the overall deadline (llm.deadline)", lastErr, wait.Round(time.Millisecond))
		}
		if c.cfg.Logf != nil {
			c.cfg.Logf("llm: %v; retry %d/%d in %s", lastErr, attempt, c.cfg.MaxRetries, wait.Round(time.Millisecond))
		}
		if err := c.sleep(ctx, wait); err != nil {
			return attempt, c.deadlineErr(err, lastErr)
		}
	}
}

// chatRequest builds the request with the fields the endpoint accepts.
func (c *Client) chatRequest(r Request) openai.ChatCompletionRequest {
	c.mu.Lock()
	p := c.params
	c.mu.Unlock()
	if !p.known {
		p = c.firstGuess()
	}
	req := openai.ChatCompletionRequest{Model: c.cfg.Model}
	if p.completionTokens {
		req.MaxCompletionTokens = r.MaxTokens
	} else {
		// Deprecated by OpenAI, but what most OpenAI-compatible servers
		// (Ollama, vLLM, OpenRouter…) take; the field is learnt per endpoint.
		//lint:ignore SA1019 max_tokens is still the field of most compatible endpoints
		req.MaxTokens = r.MaxTokens
	}
	if !p.noTemperature {
		// 0 is sent as the smallest positive float: go-openai drops a zero
		// value from the JSON, and servers then use their default (~1).
		req.Temperature = r.Temperature
		if req.Temperature == 0 {
			req.Temperature = math.SmallestNonzeroFloat32
		}
	}
	if r.System != "" {
		req.Messages = append(req.Messages, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: r.System})
	}
	req.Messages = append(req.Messages, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: r.User})
	return req
}

// firstGuess is what to send before the endpoint said anything: OpenAI
// itself takes max_completion_tokens for every model (max_tokens is
// deprecated there, rejected by its reasoning models, which also take no
// temperature); other OpenAI-compatible servers mostly know only
// max_tokens.
func (c *Client) firstGuess() params {
	reasoning := reasoningModel(c.cfg.Model)
	return params{completionTokens: reasoning || strings.Contains(c.cfg.BaseURL, "api.openai.com"), noTemperature: reasoning}
}

// adapt learns from a 400 that the endpoint rejects a field we sent
// (max_tokens, max_completion_tokens or temperature) and switches to what
// it takes. It reports whether anything changed.
func (c *Client) adapt(err error) bool {
	msg := strings.ToLower(err.Error())
	var ae *openai.APIError
	param := ""
	if errors.As(err, &ae) && ae.Param != nil {
		param = strings.ToLower(*ae.Param)
	}
	rejects := func(field string) bool {
		if param != "" {
			return param == field
		}
		if !strings.Contains(msg, field) {
			return false
		}
		for _, w := range []string{"unsupported", "not supported", "unrecognized", "unknown", "not permitted", "extra", "invalid", "not allowed"} {
			if strings.Contains(msg, w) {
				return true
			}
		}
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.params
	if !p.known {
		p = c.firstGuess()
		p.known = true
	}
	before := p
	switch {
	case !p.completionTokens && rejects("max_tokens"):
		p.completionTokens = true
	case p.completionTokens && rejects("max_completion_tokens"):
		p.completionTokens = false
	case !p.noTemperature && rejects("temperature"):
		p.noTemperature = true
	}
	if p == before {
		return false
	}
	c.params = p
	if c.cfg.Logf != nil {
		name := "max_tokens"
		if p.completionTokens {
			name = "max_completion_tokens"
		}
		temp := ""
		if p.noTemperature {
			temp = ", no temperature"
		}
		c.cfg.Logf("llm: %s rejected a request field; sending %s%s for the rest of this run", c.cfg.Model, name, temp)
	}
	return true
}

// reasoningModel matches the model families go-openai validates as
// reasoning models.
func reasoningModel(name string) bool {
	for _, p := range []string{"o1", "o3", "o4", "gpt-5", "gpt-6"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

func (c *Client) count(f func(*Stats)) {
	c.mu.Lock()
	f(&c.stats)
	c.mu.Unlock()
}

// backoff is MinBackoff·2^(attempt-1) capped at MaxBackoff, with ±20 % jitter.
func (c *Client) backoff(attempt int) time.Duration {
	return Backoff(attempt, c.cfg.MinBackoff, c.cfg.MaxBackoff, c.rnd())
}

// Backoff is ctxtool's one retry policy for network calls (issue 13):
// min·2^(attempt-1) capped at max, with ±20 % jitter (rnd in [0,1)). A
// Retry-After the server sends wins when it is longer (parseRetryAfter).
func Backoff(attempt int, min, max time.Duration, rnd float64) time.Duration {
	d := float64(min) * math.Pow(2, float64(attempt-1))
	if d > float64(max) {
		d = float64(max)
	}
	d *= 0.8 + 0.4*rnd
	return time.Duration(d)
}

// Retryable reports whether a failed HTTP call is worth retrying under
// that policy: 429, any 5xx, or a network error with no status (status 0).
// Timeouts of the caller's own per-call deadline are retryable too; the
// caller knows those.
func Retryable(status int, err error) bool {
	return status == http.StatusTooManyRequests || status >= 500 || (status == 0 && err != nil && isNetErr(err))
}

func (c *Client) deadlineErr(err, last error) error {
	msg := "cancelled"
	if errors.Is(err, context.DeadlineExceeded) {
		msg = "overall deadline reached (llm.deadline)"
	}
	if last != nil {
		return fmt.Errorf("%s: %s; last error: %w", c.cfg.Model, msg, last)
	}
	return fmt.Errorf("%s: %s", c.cfg.Model, msg)
}

func describe(cfg Config, err error, status int) error {
	hint := ""
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		hint = " (check llm.apiKey / OPENAI_API_KEY)"
	case status == http.StatusNotFound:
		hint = " (check llm.baseURL — it usually ends in /v1 — and the model name: --llm-model / llm.model)"
	case status == http.StatusBadRequest:
		hint = " (the endpoint rejected the request; check the model (--llm-model / llm.model) and its context size)"
	}
	return fmt.Errorf("%s at %s: %w%s", cfg.Model, cfg.BaseURL, err, hint)
}

func statusOf(err error) int {
	var ae *openai.APIError
	if errors.As(err, &ae) {
		return ae.HTTPStatusCode
	}
	var re *openai.RequestError
	if errors.As(err, &re) {
		return re.HTTPStatusCode
	}
	return 0
}

// isNetErr reports a transport failure by its type, not its text: a
// net.Error (dial, timeout; *url.Error and *net.OpError are ones), a
// connection closed before or during the response body (io.EOF,
// io.ErrUnexpectedEOF, which go-openai's JSON decoding returns unwrapped),
// or a reset (ECONNRESET).
func isNetErr(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// headerRecorder keeps the Retry-After header of each response, because
// go-openai's errors do not carry response headers.
type headerRecorder struct{ next http.RoundTripper }

type recorderKey struct{}

type recorded struct {
	mu  sync.Mutex
	val string
	at  time.Time
}

func (h *headerRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := h.next.RoundTrip(req)
	if resp != nil {
		if rec, ok := req.Context().Value(recorderKey{}).(*recorded); ok {
			rec.mu.Lock()
			rec.val, rec.at = resp.Header.Get("Retry-After"), time.Now()
			rec.mu.Unlock()
		}
	}
	return resp, err
}

func (r *recorded) retryAfter() (time.Duration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return parseRetryAfter(r.val, r.at)
}

// parseRetryAfter reads a Retry-After value: delay seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		d := t.Sub(now)
		if d < 0 {
			d = 0
		}
		return d, true
	}
	return 0, false
}

func transportOf(c *http.Client) http.RoundTripper {
	if c.Transport != nil {
		return c.Transport
	}
	return http.DefaultTransport
}
