// Command ctxtool manages the context window of pi and OpenClaw agent
// sessions by operating on their JSONL transcripts.
package main

import (
	"os"

	"github.com/ctxtool/ctxtool/cmd"
)

func main() { os.Exit(cmd.Execute()) }
