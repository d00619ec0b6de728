package compaction

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ctxtool/ctxtool/pkg/llm"
)

// Env is what a summariser can be made from: the services a command
// resolved from its configuration. A new summariser takes what it needs
// from here, so adding one changes nothing in cmd.
type Env struct {
	// Client returns the configured LLM client, or the error that says
	// which configuration is missing.
	Client func() (*llm.Client, error)
	// Deadline bounds a summariser's whole work (llm.deadline).
	Deadline time.Duration
}

// source makes a summariser. arg is what follows the name when the name
// ends in ':' (exec:COMMAND), else "".
type source func(arg string, env Env) (Summarizer, error)

// sources are the summarisers compaction.summarizer can name, by value;
// each summariser's file registers its own (registerSource, from init).
var sources = map[string]source{}

func registerSource(name string, s source) {
	if _, dup := sources[name]; dup {
		panic("compaction: summariser " + name + " registered twice")
	}
	sources[name] = s
}

// NewSummarizer makes the summariser a compaction.summarizer value names
// (the caller resolves "auto" first): a registered name, or a registered
// prefix ending in ':' and its argument.
func NewSummarizer(value string, env Env) (Summarizer, error) {
	if s, ok := sources[value]; ok {
		return s("", env)
	}
	if name, arg, ok := strings.Cut(value, ":"); ok {
		if s, ok := sources[name+":"]; ok {
			return s(arg, env)
		}
	}
	return nil, fmt.Errorf("--summarizer %q: no such summariser (use one of %s)", value, strings.Join(summarizerNames(), ", "))
}

// summarizerNames lists the registered names, sorted (a name ending in ':'
// takes an argument).
func summarizerNames() []string { return slices.Sorted(maps.Keys(sources)) }
