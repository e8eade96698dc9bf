package gyrumcli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gyrum-labs/warp/internal/clikit"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
)

func (a *App) noteCommand() *cobra.Command {
	var dir string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   `note "TEXT" [--dir D] [--json]`,
		Short: "Leave a note for whoever takes the ticket next: what you tried, what you plan",
		Long: `note writes TEXT (at most 1024 bytes) to .gyrum/note.json with the time; the
loop sends it with its next heartbeat and warp keeps it as the attempt's last
note (gyrum release and complete-pr send a note the loop has not sent yet).
If the lease ends — the agent crashes, loops, is stopped — the next agent that
claims the ticket is shown it by gyrum start-work. Leave one when you change
course and before you release. A new note replaces the last one.`,
		Example: `  gyrum note "npm test fails on node 18 (TypeError in lib/x.js); trying node 20 next"
  gyrum note "giving up on the migration approach: the schema lock is held by prod" --json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return clikit.Usagef(`%s takes one argument, got %d: quote the note, gyrum note "what you tried, what you plan"`, cmd.CommandPath(), len(args))
			}
			return nil
		},
		RunE: clikit.Action(func(cmd *cobra.Command, args []string) error {
			d, err := a.findDir(dir)
			if err != nil {
				return err
			}
			if !d.HasLease() {
				return clikit.Usagef("%s holds no lease: a note belongs to a lease", d.Worktree)
			}
			n := gyrumdir.Note{Text: strings.TrimSpace(args[0]), At: a.now()}
			if err := n.Validate(); err != nil {
				return clikit.Usagef("%v", err)
			}
			if err := d.WriteNote(n); err != nil {
				return err
			}
			if asJSON {
				return clikit.PrintJSON(a.Stdout, n)
			}
			_, err = fmt.Fprintln(a.Stdout, "noted: the loop sends it with its next heartbeat")
			return err
		}),
	}
	cmd.Flags().StringVar(&dir, "dir", "", "the worktree (default: the nearest .gyrum/ above the working directory)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the note as JSON")
	return cmd
}
