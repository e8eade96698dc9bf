package warpcli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/clikit"
	"github.com/gyrum-labs/warp/internal/clikit/apiclient"
)

// DefaultHealthcheckTimeout bounds warp healthcheck's request: an
// orchestrator's probe wants an answer, not a hang.
const DefaultHealthcheckTimeout = 3 * time.Second

// HealthReport is the --json output of warp healthcheck.
type HealthReport struct {
	URL     string `json:"url"`
	Path    string `json:"path"`
	Healthy bool   `json:"healthy"`
	// Status is the server's answer ("ok", "ready") when healthy.
	Status string `json:"status,omitempty"`
	// Error says why not, when not healthy.
	Error string `json:"error,omitempty"`
}

// checkHealth asks the server cl talks to for path (/healthz, /readyz)
// within timeout: the report, and the error that made it unhealthy.
func checkHealth(ctx context.Context, cl *client.Client, path string, timeout time.Duration) (HealthReport, error) {
	rep := HealthReport{URL: cl.BaseURL(), Path: path}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var h client.Health
	err := cl.Do(ctx, http.MethodGet, path, nil, &h)
	if err == nil && h.Status == "" {
		err = errors.New("the answer has no status: is this a warp server?")
	}
	if errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("GET %s%s: no answer within %s", rep.URL, path, timeout)
	}
	if err != nil {
		rep.Error = apiclient.Message(err)
	} else {
		rep.Healthy, rep.Status = true, h.Status
	}
	return rep, err
}

func (c *CLI) healthcheckCommand() *cobra.Command {
	var o clientOptions
	var ready bool
	timeout := DefaultHealthcheckTimeout
	cmd := &cobra.Command{
		Use:   "healthcheck",
		Short: "Check that a warp server answers (exit 0 healthy, 1 not)",
		Long: `Check that the warp server at --url (WARP_URL, default ` + client.DefaultURL + `)
answers GET /healthz, or with --ready GET /readyz (the server also reaches its
database), within --timeout. Exit 0 when it does, 1 when it does not.

It needs no token and no shell: the container image runs it as its
HEALTHCHECK (the distroless image has no curl).`,
		Example: `  warp healthcheck
  warp healthcheck --ready --url http://warp.internal:7077
  warp healthcheck --json`,
		Args: clikit.NoArgs("it checks the server at --url"),
		RunE: clikit.Action(func(cmd *cobra.Command, args []string) error {
			if timeout <= 0 {
				return clikit.Usagef("--timeout must be positive, got %s", timeout)
			}
			cl, err := c.client(cmd, &o)
			if err != nil {
				return err
			}
			path := "/healthz"
			if ready {
				path = "/readyz"
			}
			rep, err := checkHealth(cmd.Context(), cl, path, timeout)
			if o.json {
				if err := c.printJSON(rep); err != nil {
					return err
				}
				if !rep.Healthy {
					return clikit.Exit(ExitError)
				}
				return nil
			}
			if !rep.Healthy {
				return fail(cl, err)
			}
			fmt.Fprintf(c.Stdout, "%s%s: %s\n", rep.URL, path, rep.Status)
			return nil
		}),
	}
	cmd.Flags().StringVar(&o.url, "url", "", "warp server URL (env WARP_URL, default "+client.DefaultURL+")")
	cmd.Flags().BoolVar(&o.json, "json", false, "print the result as JSON (also -o json)")
	cmd.Flags().BoolVar(&ready, "ready", false, "check GET /readyz (the server reaches its database) instead of /healthz")
	cmd.Flags().DurationVar(&timeout, "timeout", timeout, "give up after this long")
	return cmd
}
