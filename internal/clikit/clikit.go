// Package clikit is the plumbing the warp and gyrum command trees share, so
// both binaries behave alike; each program keeps only its commands, its
// hints and its environment prefix.
//
//   - Errors and exit codes: Usagef (exit 2, pointing at --help), Failure
//     and Fail (exit 1), Exit and WithExitCode (a code of the command's
//     own), and Action, which adapts a command body to them.
//   - Running: SetupRoot prepares a root command, Execute runs it and turns
//     its error into the "PROG: ..." lines and the exit code.
//   - Environment: EnvName and BindEnv set flags from PREFIX_FLAG_NAME
//     variables; LookupEnv, Getenv and Now read the fields tests replace.
//   - Output: PrintJSON, the --json output of every command.
//   - Install, for what a distributed binary needs: --version and a
//     `version` command, shell completion (cobra's `completion
//     bash|zsh|fish|powershell`), `gen-man DIR` that writes a man page per
//     visible command, and -o/--output beside every --json.
//
// Subpackage apiclient holds what both share about the warp server they
// talk to; clikittest checks what Install adds through a program's own
// command line.
package clikit

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/gyrum-labs/warp/internal/version"
)

// Install adds to root (the command of the program root.Name()):
//
//   - --version (and -v), printing version.Info.String();
//   - `version [--json]`;
//   - cobra's default `completion bash|zsh|fish|powershell` command,
//     which it enables (an unknown shell is a usage error);
//   - `gen-man DIR` (see GenManTree), listed in the help like the others;
//   - -o/--output json|text on every command of the tree that has a
//     boolean --json (-o json is --json, -o text the default output).
//
// Call it after SetupRoot (or root.SetOut) and after the program's own
// commands are added. The bodies of the new commands go through Action.
func Install(root *cobra.Command) {
	prog := root.Name()
	info := version.Get(prog)
	root.Version = info.String()
	root.SetVersionTemplate("{{.Version}}\n")
	root.AddCommand(versionCommand(prog), genManCommand(prog))

	// cobra adds `completion` when the tree runs; add it now, writing to
	// root's output (SetOut must come before Install), so that a shell it
	// does not know is a usage error rather than the help and exit 0.
	root.CompletionOptions.DisableDefaultCmd = false
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			c.Example = "  " + prog + " completion bash > /etc/bash_completion.d/" + prog + "\n" +
				"  " + prog + " completion zsh > \"${fpath[1]}/_" + prog + "\"\n" +
				"  " + prog + " completion fish > ~/.config/fish/completions/" + prog + ".fish"
			c.RunE = func(cmd *cobra.Command, args []string) error { return cmd.Help() }
		}
	}
	addOutputFlags(root)
}

func versionCommand(prog string) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version [--json]",
		Short: "Print the version of this " + prog + " binary",
		Long: `version prints the version of this binary, the commit it was built from (with
", modified" when the tree had uncommitted changes), the commit's date and the
Go toolchain; --json prints the same as an object (program, version, commit,
commit_time, modified, go, os, arch). A build whose version is unknown (go run,
go build outside a release) says "` + version.Devel + `".`,
		Example: "  " + prog + " version\n  " + prog + " version --json\n  " + prog + " --version",
		Args:    cobra.NoArgs,
		RunE: Action(func(cmd *cobra.Command, args []string) error {
			info := version.Get(prog)
			if asJSON {
				return PrintJSON(cmd.OutOrStdout(), info)
			}
			_, err := fmt.Fprintln(cmd.OutOrStdout(), info.String())
			return err
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the version as JSON")
	return cmd
}

func genManCommand(prog string) *cobra.Command {
	return &cobra.Command{
		Use:   "gen-man DIR",
		Short: "Write the man pages of " + prog + " into DIR",
		Long: `gen-man writes one man page (section 1) per visible command into DIR, creating
it if needed: ` + prog + `.1, then one page per subcommand named after its path
(` + prog + `-version.1, ...). Packagers install them under
/usr/share/man/man1; 'man -l DIR/` + prog + `.1' reads one in place.`,
		Example: "  " + prog + " gen-man ./man && man -l ./man/" + prog + ".1",
		Args:    cobra.ExactArgs(1),
		RunE: Action(func(cmd *cobra.Command, args []string) error {
			if err := os.MkdirAll(args[0], 0o755); err != nil {
				return fmt.Errorf("create the man page directory: %w", err)
			}
			files, err := GenManTree(cmd.Root(), args[0], version.Get(prog))
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %d man pages to %s\n", len(files), args[0])
			return nil
		}),
	}
}
