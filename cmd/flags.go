package cmd

import (
	"github.com/spf13/cobra"

	"github.com/ctxtool/ctxtool/pkg/config"
)

// configFlags defines the flags of config keys from the key table (name,
// default, help) and completes the values of the enumerated ones.
func configFlags(c *cobra.Command, keys ...string) {
	for _, name := range keys {
		f := config.Flag(c.Flags(), name)
		if k, _ := config.FlagKey(f); len(k.Enum) > 0 {
			enumCompletion(c, f.Name, k.Enum)
		}
	}
}

// enumCompletion offers values for a flag in shell completion.
func enumCompletion(c *cobra.Command, flag string, values []string) {
	_ = c.RegisterFlagCompletionFunc(flag, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
}
