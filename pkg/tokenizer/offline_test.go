package tokenizer

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	tiktoken "github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
)

// offline is tiktoken-go's own reading of the embedded tables, the
// reference the tests hold ours to. The binary links only the loader's
// assets (loadRanks): tiktoken-go itself, with regexp2 and uuid, is a
// test dependency.
var offline tiktoken.BpeLoader = tiktoken_loader.NewOfflineLoader()

// The tokenizer must never touch the network nor depend on a download cache.
// TestNeverTouchesNetwork re-runs this test binary as a child process whose
// environment makes any fetch fail: HTTP(S)_PROXY point at a closed port,
// TIKTOKEN_CACHE_DIR / DATA_GYM_CACHE_DIR / TMPDIR are fresh empty
// directories, and inside the child http.DefaultTransport is replaced by a
// trap that counts requests and refuses them. The child first proves the trap
// works (tiktoken-go's default loader, asked for the same file, is caught),
// then loads both encodings, counts, and checks tiktoken-go, given the
// embedded tables, counts the same. The parent checks the
// child's answer and that the cache directories are still empty.

const childEnv = "CTXTOOL_TOKENIZER_OFFLINE_CHILD"

type trap struct{ hits atomic.Int64 }

func (tr *trap) RoundTrip(r *http.Request) (*http.Response, error) {
	tr.hits.Add(1)
	return nil, errors.New("network access attempted: " + r.URL.String())
}

func TestNeverTouchesNetwork(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("running as child")
	}
	cache, gym, tmp := t.TempDir(), t.TempDir(), t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestOfflineChild$", "-test.v")
	cmd.Env = append(os.Environ(),
		childEnv+"=1",
		"HTTPS_PROXY=http://127.0.0.1:1", "HTTP_PROXY=http://127.0.0.1:1",
		"https_proxy=http://127.0.0.1:1", "http_proxy=http://127.0.0.1:1",
		"NO_PROXY=", "no_proxy=",
		"TIKTOKEN_CACHE_DIR="+cache, "DATA_GYM_CACHE_DIR="+gym, "TMPDIR="+tmp,
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("offline child failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "OFFLINE-OK o200k=2 cl100k=2") {
		t.Fatalf("offline child did not count:\n%s", out)
	}
	for _, d := range []string{cache, gym, tmp} {
		entries, err := os.ReadDir(d)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 0 {
			t.Errorf("%s was written to: %v", d, entries)
		}
	}
}

func TestOfflineChild(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("only runs as the child of TestNeverTouchesNetwork")
	}
	tr := &trap{}
	http.DefaultTransport = tr

	// The trap must catch a real attempt: tiktoken-go's default loader with an empty cache.
	if _, err := tiktoken.NewDefaultBpeLoader().LoadTiktokenBpe("https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"); err == nil {
		t.Fatal("default loader succeeded without network: the test cannot detect a fetch")
	}
	if tr.hits.Load() == 0 {
		t.Fatal("trap did not see the default loader's request")
	}
	tr.hits.Store(0)

	counts := map[Encoding]int{}
	for _, enc := range encodings() {
		tk, err := Get(string(enc))
		if err != nil {
			t.Fatalf("Get(%s) offline: %v", enc, err)
		}
		counts[enc] = tk.Count("hello world")
	}
	// tiktoken-go, given the embedded tables, counts what we count.
	tiktoken.SetBpeLoader(offline)
	ref, err := tiktoken.GetEncoding("cl100k_base")
	if err != nil {
		t.Fatalf("tiktoken-go GetEncoding offline: %v", err)
	}
	if n := len(ref.EncodeOrdinary("hello world")); n != counts[Cl100k] {
		t.Fatalf("cl100k: tiktoken-go counts %d, we count %d", n, counts[Cl100k])
	}
	if n := tr.hits.Load(); n != 0 {
		t.Fatalf("%d network requests while loading the tokenizers", n)
	}
	fmt.Printf("OFFLINE-OK o200k=%d cl100k=%d\n", counts[O200k], counts[Cl100k])
}

// The rank tables read by loadRanks are the offline loader's, entry for
// entry.
func TestLoadRanksIsTheLoaders(t *testing.T) {
	for _, enc := range encodings() {
		got, err := loadRanks(files[enc])
		if err != nil {
			t.Fatal(err)
		}
		want, err := offline.LoadTiktokenBpe(files[enc])
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) || len(got) < 100000 {
			t.Fatalf("%s: %d ranks, the loader %d", enc, len(got), len(want))
		}
		for k, v := range want {
			if r, ok := got[k]; !ok || r != v {
				t.Fatalf("%s: token %q rank %d, the loader %d", enc, k, r, v)
			}
		}
	}
}
