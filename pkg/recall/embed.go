package recall

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/ctxtool/ctxtool/pkg/llm"
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
	// MaxRetries on 429, 5xx, timeouts and network errors (config
	// llm.maxRetries; 0 = no retry), with pkg/llm's backoff starting at
	// Backoff (default 500 ms).
	MaxRetries int
	Backoff    time.Duration
	// BatchSize texts per request (default 64).
	BatchSize int
}

// OpenAIEmbedder calls POST {BaseURL}/embeddings through pkg/llm, so
// embeddings and summaries share one retry policy.
type OpenAIEmbedder struct {
	client    *llm.Client
	batchSize int
}

// NewOpenAIEmbedder builds a client; Model is required.
func NewOpenAIEmbedder(c EmbedderConfig) (*OpenAIEmbedder, error) {
	if c.Model == "" {
		return nil, errors.New("recall: no embedding model (set llm.embeddingModel)")
	}
	if c.Timeout <= 0 {
		c.Timeout = 60 * time.Second
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 64
	}
	cl, err := llm.New(llm.Config{BaseURL: c.BaseURL, Model: c.Model, APIKey: c.APIKey, Timeout: c.Timeout,
		MaxRetries: c.MaxRetries, MinBackoff: c.Backoff})
	if err != nil {
		return nil, fmt.Errorf("recall: %w", err)
	}
	return &OpenAIEmbedder{client: cl, batchSize: c.BatchSize}, nil
}

// Model implements Embedder.
func (e *OpenAIEmbedder) Model() string { return e.client.Model() }

// Embed implements Embedder, in batches.
func (e *OpenAIEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for i := 0; i < len(texts); i += e.batchSize {
		vecs, err := e.client.Embed(ctx, texts[i:min(i+e.batchSize, len(texts))])
		if err != nil {
			return nil, fmt.Errorf("recall: embeddings: %w (check llm.baseURL, llm.apiKey / OPENAI_API_KEY and llm.embeddingModel)", err)
		}
		out = append(out, vecs...)
	}
	return out, nil
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
