package recall

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Embedder turns texts into vectors. Semantic search is optional: without
// an embedder the index is keyword-only (OpenClaw's "fts-only" mode).
type Embedder interface {
	// Model names the vectors; chunks embedded with another model are
	// embedded again.
	Model() string
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// EmbedderConfig configures the OpenAI-compatible embeddings client.
type EmbedderConfig struct {
	BaseURL string // e.g. https://api.openai.com/v1 ("" = OpenAI)
	APIKey  string
	Model   string
	// Timeout per HTTP request (default 60 s).
	Timeout time.Duration
	// MaxRetries on 429, 408, 5xx and network errors (config
	// llm.maxRetries; 0 = no retry), with exponential backoff from Backoff
	// (default 500 ms, jittered, ≤ 20 s).
	MaxRetries int
	Backoff    time.Duration
	// BatchSize texts per request (default 64).
	BatchSize int
}

// OpenAIEmbedder calls POST {BaseURL}/embeddings.
type OpenAIEmbedder struct {
	cfg    EmbedderConfig
	client *openai.Client
}

// NewOpenAIEmbedder builds a client; Model is required.
func NewOpenAIEmbedder(c EmbedderConfig) (*OpenAIEmbedder, error) {
	if c.Model == "" {
		return nil, errors.New("recall: no embedding model (set llm.embeddingModel)")
	}
	if c.Timeout <= 0 {
		c.Timeout = 60 * time.Second
	}
	if c.MaxRetries < 0 {
		c.MaxRetries = 0
	}
	if c.Backoff <= 0 {
		c.Backoff = 500 * time.Millisecond
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 64
	}
	oc := openai.DefaultConfig(c.APIKey)
	if c.BaseURL != "" {
		oc.BaseURL = c.BaseURL
	}
	oc.HTTPClient = &http.Client{Timeout: c.Timeout}
	return &OpenAIEmbedder{cfg: c, client: openai.NewClientWithConfig(oc)}, nil
}

// Model implements Embedder.
func (e *OpenAIEmbedder) Model() string { return e.cfg.Model }

// Embed implements Embedder, in batches, retrying transient failures.
func (e *OpenAIEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for i := 0; i < len(texts); i += e.cfg.BatchSize {
		batch := texts[i:min(i+e.cfg.BatchSize, len(texts))]
		vecs, err := e.embedBatch(ctx, batch)
		if err != nil {
			return nil, err
		}
		out = append(out, vecs...)
	}
	return out, nil
}

func (e *OpenAIEmbedder) embedBatch(ctx context.Context, batch []string) ([][]float32, error) {
	var lastErr error
	for attempt := 0; attempt <= e.cfg.MaxRetries; attempt++ {
		if attempt > 0 {
			d := e.cfg.Backoff << (attempt - 1)
			d = min(d, 20*time.Second)
			d = d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(d):
			}
		}
		resp, err := e.client.CreateEmbeddings(ctx, openai.EmbeddingRequest{
			Input: batch, Model: openai.EmbeddingModel(e.cfg.Model)})
		if err == nil {
			if len(resp.Data) != len(batch) {
				return nil, fmt.Errorf("recall: embeddings endpoint returned %d vectors for %d texts", len(resp.Data), len(batch))
			}
			vecs := make([][]float32, len(batch))
			for _, d := range resp.Data {
				if d.Index < 0 || d.Index >= len(batch) {
					return nil, fmt.Errorf("recall: embeddings endpoint returned index %d for %d texts", d.Index, len(batch))
				}
				vecs[d.Index] = d.Embedding
			}
			return vecs, nil
		}
		lastErr = err
		if ctx.Err() != nil || !retryable(err) {
			break
		}
	}
	return nil, fmt.Errorf("recall: embeddings (%s, model %s): %v (check llm.baseURL, llm.apiKey / OPENAI_API_KEY and llm.embeddingModel)",
		e.cfg.BaseURL, e.cfg.Model, lastErr)
}

// retryable: rate limits, server errors, timeouts and dropped connections.
func retryable(err error) bool {
	code := 0
	var ae *openai.APIError
	var re *openai.RequestError
	switch {
	case errors.As(err, &ae):
		code = ae.HTTPStatusCode
	case errors.As(err, &re):
		code = re.HTTPStatusCode
	}
	if code != 0 {
		return code == http.StatusTooManyRequests || code == http.StatusRequestTimeout || code >= 500
	}
	if errors.Is(err, context.Canceled) {
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF)
}

// embedMissing embeds the chunks of a file that have no vector of the
// current model (new chunks, or an index built before embeddings were
// configured). Network calls happen outside the write transaction.
func (ix *Index) embedMissing(ctx context.Context, fileID int64) (int, error) {
	if ix.embedder == nil {
		return 0, nil
	}
	model := ix.embedder.Model()
	ids, texts, err := ix.st.unembedded(ctx, fileID, model)
	if err != nil {
		return 0, err
	}
	done := 0
	const step = 256
	for i := 0; i < len(ids); i += step {
		j := min(i+step, len(ids))
		vecs, err := ix.embedder.Embed(ctx, texts[i:j])
		if err != nil {
			return done, err
		}
		if len(vecs) != j-i {
			return done, fmt.Errorf("recall: embedder returned %d vectors for %d texts", len(vecs), j-i)
		}
		enc := make([][]byte, len(vecs))
		for k, v := range vecs {
			enc[k] = encodeVec(v)
		}
		if err := ix.st.storeVectors(ctx, model, ids[i:j], enc); err != nil {
			return done, err
		}
		done += j - i
	}
	return done, nil
}

// encodeVec stores a vector as little-endian float32, normalised to unit
// length so that cosine similarity is a dot product.
func encodeVec(v []float32) []byte {
	var norm float64
	for _, x := range v {
		norm += float64(x) * float64(x)
	}
	norm = math.Sqrt(norm)
	b := make([]byte, 4*len(v))
	for i, x := range v {
		if norm > 0 {
			x = float32(float64(x) / norm)
		}
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// dotEncoded is the cosine similarity of a unit query vector and a stored
// (unit) vector; 0 when the dimensions differ.
func dotEncoded(q []float32, b []byte) float64 {
	if len(b) != 4*len(q) {
		return 0
	}
	var s float32
	for i, x := range q {
		s += x * math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return float64(s)
}

func normalize(v []float32) []float32 {
	var norm float64
	for _, x := range v {
		norm += float64(x) * float64(x)
	}
	norm = math.Sqrt(norm)
	out := make([]float32, len(v))
	for i, x := range v {
		if norm > 0 {
			out[i] = float32(float64(x) / norm)
		}
	}
	return out
}
