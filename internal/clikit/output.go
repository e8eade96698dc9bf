package clikit

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/spf13/cobra"
)

// PrintJSON writes v to w as JSON indented by two spaces, with a final
// newline: the --json output of every command.
func PrintJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// addOutputFlags gives every command of the tree below cmd that has a
// boolean --json the same choice as -o/--output json|text: -o json is
// --json, -o text the default output; -o text with --json is a usage
// error.
func addOutputFlags(cmd *cobra.Command) {
	for _, sub := range cmd.Commands() {
		addOutputFlags(sub)
	}
	jf := cmd.Flags().Lookup("json")
	if jf == nil || jf.Value.Type() != "bool" || cmd.RunE == nil || cmd.Flags().Lookup("output") != nil {
		return
	}
	out := &outputFormat{}
	cmd.Flags().VarP(out, "output", "o", "output format: text or json (-o json is --json)")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(outputFormats, cobra.ShellCompDirectiveNoFileComp))
	run := cmd.RunE
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		switch out.value {
		case "json":
			if err := jf.Value.Set("true"); err != nil {
				return err
			}
		case "text":
			if jf.Value.String() == "true" {
				return Usagef("--json and -o text contradict each other: pass one of them")
			}
		}
		return run(cmd, args)
	}
}

var outputFormats = []string{"text", "json"}

// outputFormat is the value of -o/--output.
type outputFormat struct{ value string }

func (o *outputFormat) String() string { return o.value }
func (o *outputFormat) Type() string   { return "format" }
func (o *outputFormat) Set(s string) error {
	if !slices.Contains(outputFormats, s) {
		return fmt.Errorf("want text or json")
	}
	o.value = s
	return nil
}

// Stamp writes t as the command lines show a point in time: local time to
// the second, "-" for the zero time.
func Stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}
