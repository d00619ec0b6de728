package cmd

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/ctxtool/ctxtool/pkg/config"
	"github.com/ctxtool/ctxtool/pkg/exitcode"
	"github.com/ctxtool/ctxtool/pkg/iostreams"
	"github.com/ctxtool/ctxtool/pkg/recall"
	"github.com/ctxtool/ctxtool/pkg/walk"
)

// IndexOptions are the inputs of `ctxtool index`.
type IndexOptions struct {
	IO    *IOStreams
	Paths []string
	JSON  bool
	// AllowEmpty: finding no session file in Paths is not an error.
	AllowEmpty bool
	// Recall is where the index is and how it embeds.
	Recall recallSettings
	// Rebuild empties the index first (--rebuild).
	Rebuild bool
}

func newIndexCmd(f *Factory, runF func(*IndexOptions) error) *cobra.Command {
	return command(f, &IndexOptions{IO: f.IO}, runF, runIndex, &cobra.Command{
		Use:   "index [PATH]...",
		Short: "Build or refresh the recall index of session transcripts",
		Long: `Index every message of every session file for 'ctxtool search' — the whole
file, all branches, including what compactions and rolls removed from the
active context. Directories are walked for transcripts (*.jsonl) and their
.reset./.deleted. archives, as OpenClaw's memory search does; locks, backups,
checkpoint copies and trajectories are skipped.

Incremental: unchanged files are skipped, a file that grew is read from where
the last run stopped, a file whose indexed part changed is indexed again, and
files that were removed from an indexed directory drop out. A trailing line
without newline (a session being written) waits for the next run.

Each file is indexed all-or-nothing: a run killed at any moment leaves the
index as it was before that file, and the next run completes it.

The index lives in <state-dir>/recall/index.sqlite (its full-text indexes
beside it, in index.sqlite.fts), or where --index (config recall.url)
says: another SQLite file (and its .fts file), or a PostgreSQL database
(postgres://user:password@host/db) that any number of machines index into
and search at once. --rebuild empties the index first (the remedy for a
damaged index; on PostgreSQL it empties every machine's rows).

With llm.embeddingModel set, chunks are also embedded through the
OpenAI-compatible endpoint (llm.baseURL, llm.apiKey / OPENAI_API_KEY) for
hybrid search.`,
		Example: `  ctxtool index ~/.openclaw/agents/main/sessions
  ctxtool index --json ~/.pi/agent/sessions
  ctxtool index --index postgres://ctxtool@db.internal/recall /srv/agents/*/sessions
  ctxtool index --rebuild ~/.pi/agent/sessions`,
		Args: cobra.ArbitraryArgs,
	})
}

func (o *IndexOptions) flags(cmd *cobra.Command) {
	addIndexFlag(cmd)
	allowEmptyFlag(cmd, &o.AllowEmpty)
	cmd.Flags().BoolVar(&o.Rebuild, "rebuild", false, "empty the index first and index everything again (a damaged index's remedy)")
}

func (o *IndexOptions) resolve(f *Factory, cfg *config.Config, c *cobra.Command, args []string) error {
	o.Paths = args
	o.JSON = f.JSON
	var err error
	o.Recall, err = f.Recall()
	return err
}

// indexGCPercent is the collector's GOGC for an index run. The run's
// memory is mostly SQLite's (its page cache and FTS5's pending terms, over
// 100 MB, outside the Go heap), while the Go heap holds a few MB of live
// data: at the default 100 the collector ran every 2-3 MB allocated, about
// 300 times per 100 MB indexed, each cycle taking CPU from the reader and
// the writer. At 400 it runs a quarter as often: CPU 0.9x at 10 MB and
// 100 MB, 0.82x for a directory of 500 small sessions (paired runs), peak
// RSS +10-25 MB.
const indexGCPercent = 400

func runIndex(ctx context.Context, opts *IndexOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	defer setGCPercent(indexGCPercent)()
	discovered := len(opts.Paths) == 0
	roots, err := readPaths(opts.IO.ErrOut, opts.Paths)
	if err != nil {
		return err
	}
	files, err := walkInputs(opts.IO.ErrOut, roots, walk.Options{Kinds: []walk.Kind{walk.Transcript, walk.Archive}}, opts.AllowEmpty)
	if err != nil {
		return err
	}
	if discovered {
		noticeFound(opts.IO.ErrOut, files)
	}
	ix, err := openIndex(opts)
	if err != nil {
		return err
	}
	defer ix.Close()
	if why := ix.Emptied(); why != "" {
		fmt.Fprintf(opts.IO.ErrOut, "note: %s\n", why)
	}

	var total int64
	paths := make([]string, len(files))
	for i, f := range files {
		total += f.Size
		paths[i] = f.Path
	}
	rep := &indexReporter{opts: opts, prog: opts.IO.NewProgress("indexing", "files", len(files)), total: total}
	start := time.Now()
	if err := ix.IndexFiles(ctx, paths, rep.indexed); err != nil {
		// The storage failed (or the run was cancelled): the files not
		// reported are not indexed; what was reported is kept.
		rep.prog.Clear()
		return exitcode.New(exitcode.Runtime, err)
	}
	if rep.writeErr != nil {
		return rep.writeErr
	}
	// Files that vanished from the walked directories drop out.
	removed, err := ix.PruneUnder(ctx, opts.Paths)
	if err != nil {
		rep.failed++
		fmt.Fprintf(opts.IO.ErrOut, "ctxtool: %v\n", err)
	}
	rep.prog.Clear()
	for _, r := range removed {
		if err := rep.removed(r); err != nil {
			return err
		}
	}
	if !opts.JSON {
		took := time.Since(start)
		sz, err := ix.Sizes(ctx)
		if err != nil {
			fmt.Fprintf(opts.IO.ErrOut, "ctxtool: %v\n", err)
		}
		printIndexTable(opts.IO, rep.all, ix.Path(), took, sz)
	}
	if rep.failed > 0 {
		return exitcode.Silent(exitcode.Runtime)
	}
	return nil
}

// openIndex opens the index, emptied first with --rebuild.
func openIndex(opts *IndexOptions) (*recall.Index, error) {
	if opts.Rebuild {
		loc, err := opts.Recall.location()
		if err != nil {
			return nil, exitcode.New(exitcode.Usage, err)
		}
		if err := recall.Rebuild(loc); err != nil {
			return nil, exitcode.New(exitcode.Runtime, err)
		}
	}
	return opts.Recall.open()
}

// indexReporter takes the stats of each file as the index reports them:
// it shows progress, prints errors and warnings, writes the JSON lines, and
// keeps every file's stats for the table.
type indexReporter struct {
	opts  *IndexOptions
	prog  *iostreams.Progress
	total int64 // bytes of all the files

	done     int64 // bytes read so far
	all      []recall.Stats
	failed   int
	writeErr error
}

func (p *indexReporter) indexed(st recall.Stats, err error) {
	p.done += st.Bytes
	p.prog.Update(len(p.all)+1, fmt.Sprintf("%.1f MB new of %.1f MB", float64(p.done)/1e6, float64(p.total)/1e6))
	if err != nil {
		p.failed++
		p.prog.Clear()
		fmt.Fprintf(p.opts.IO.ErrOut, "ctxtool: %v\n", err)
		st.Skipped = "error: " + err.Error()
	}
	if len(st.MalformedLines) > 0 {
		p.prog.Clear()
		warnMalformed(p.opts.IO.ErrOut, st.File, st.MalformedLines, "indexes the records that decode")
	}
	if p.opts.JSON && p.writeErr == nil {
		p.writeErr = writeJSONLine(p.opts.IO.Out, st)
	}
	p.all = append(p.all, st)
}

// removed reports a file pruneVanished dropped.
func (p *indexReporter) removed(file string) error {
	st := recall.Stats{File: file, Skipped: "removed", Mode: "removed"}
	if p.opts.JSON {
		if err := writeJSONLine(p.opts.IO.Out, st); err != nil {
			return err
		}
	}
	p.all = append(p.all, st)
	return nil
}

func printIndexTable(streams *IOStreams, all []recall.Stats, db string, took time.Duration, sz recall.Sizes) {
	out := streams.Out
	t := newTable(out).term(streams)
	t.row("FILE", "STATUS", "LINES", "CHUNKS", "MB", "SECONDS")
	var bytes int64
	var left recall.LeftOut
	indexed, unchanged := 0, 0
	for _, st := range all {
		status := st.Mode
		if st.Skipped != "" && st.Skipped != "unchanged" {
			status = st.Skipped
		}
		if st.Indexed {
			indexed++
		} else if st.Skipped == "unchanged" {
			unchanged++
		}
		bytes += st.Bytes
		left.Add(st.LeftOut)
		t.row(displayPath(st.File), status, fmt.Sprintf("%s/%s", humanInt(st.LinesIndexed), humanInt(st.Lines)),
			humanInt(st.Chunks), fmt.Sprintf("%.2f", float64(st.Bytes)/1e6), fmt.Sprintf("%.3f", st.Seconds))
	}
	t.flush()
	rate := ""
	if s := took.Seconds(); s > 0 && bytes > 0 {
		rate = fmt.Sprintf(", %.1f MB/s", float64(bytes)/1e6/s)
	}
	fmt.Fprintf(out, "\n%d indexed, %d unchanged, %.1f MB in %.2fs%s; index %s\n",
		indexed, unchanged, float64(bytes)/1e6, took.Seconds(), rate, filepath.Clean(db))
	if sz.Corpus > 0 {
		fmt.Fprintf(out, "index size %.1f MB, %.0f%% of the %.1f MB of sessions it covers\n",
			float64(sz.Index)/1e6, 100*sz.Share(), float64(sz.Corpus)/1e6)
	}
	if left.Blobs > 0 || left.Images > 0 {
		fmt.Fprintf(out, "left out of the text indexed now: %d blobs (base64, binary output; %.1f MB), %d images\n",
			left.Blobs, float64(left.BlobBytes)/1e6, left.Images)
	}
	if left.Cut > 0 {
		fmt.Fprintf(out, "left out of the middle of %d tool outputs over 8 MiB: %.1f MB (head and tail indexed)\n",
			left.Cut, float64(left.CutBytes)/1e6)
	}
}
