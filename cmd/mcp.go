package cmd

import (
	"context"
	"io"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/ctxtool/ctxtool/pkg/config"
	"github.com/ctxtool/ctxtool/pkg/mcpserver"
)

// MCPOptions are the inputs of `ctxtool mcp`.
type MCPOptions struct {
	IO     *IOStreams
	Recall recallSettings
	Cwd    string
	Home   string
	// AllProjects is config mcp.allProjects.
	AllProjects bool
}

func newMCPCmd(f *Factory, runF func(*MCPOptions) error) *cobra.Command {
	return command(f, &MCPOptions{IO: f.IO}, runF, runMCP, &cobra.Command{
		Use:   "mcp",
		Short: "Serve ctxtool's recall and session tools to an agent over MCP (stdio)",
		Long: `Run an MCP server on stdin/stdout (the official Go SDK) with four tools:

  search        the recall index ('ctxtool index'), scoped to the current
                project (the working directory's git root); all_projects
                searches every project where config mcp.allProjects is
                true; each hit cites agent, project, session, line
  read          the message at a cited session line (only files a search
                of this server cited)
  context_size  this session's context against the agent's auto-compact point
  checkpoint    this session's latest checkpoint as resume text

'ctxtool install claude-code|codex' registers it; any MCP client (pi,
OpenClaw) can run 'ctxtool mcp' the same way.`,
		Example: `  claude mcp add --scope user ctxtool -- ctxtool mcp
  codex mcp add ctxtool -- ctxtool mcp`,
		Args: cobra.NoArgs,
	})
}

func (o *MCPOptions) flags(c *cobra.Command) {}

func (o *MCPOptions) resolve(f *Factory, cfg *config.Config, c *cobra.Command, _ []string) error {
	var err error
	if o.Recall, err = f.Recall(); err != nil {
		return err
	}
	o.AllProjects = cfg.Bool(nil, "mcp.allProjects")
	o.Cwd, _ = os.Getwd()
	o.Home, _ = os.UserHomeDir()
	return nil
}

func runMCP(ctx context.Context, o *MCPOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	srv, _ := mcpserver.New(mcpserver.Options{
		Open: func() (mcpserver.Searcher, error) {
			ix, err := o.Recall.open()
			if err != nil {
				return nil, err
			}
			return ix, nil
		},
		Cwd:      o.Cwd,
		StateDir: o.Recall.StateDir,
		Home:     o.Home,
		Version:  buildVersion(),

		AllProjects: o.AllProjects,
	})
	// A query is capped at 1000 bytes; a frame at 1 MiB.
	return srv.Run(ctx, &mcp.IOTransport{Reader: readCloser{o.IO.In}, Writer: writeCloser{o.IO.Out}, MaxLineLength: 1 << 20})
}

// readCloser and writeCloser let the command's streams (a terminal, a
// pipe, a test buffer) serve as the MCP transport, which closes them.
type readCloser struct{ io.Reader }

func (readCloser) Close() error { return nil }

type writeCloser struct{ io.Writer }

func (writeCloser) Close() error { return nil }
