package heartbeat

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/gyrumdir"
	"github.com/gyrum-labs/warp/internal/snapshot"
)

// SnapshotAPI is the part of warp's API that records an attempt's
// snapshot (client.Client has it).
type SnapshotAPI interface {
	RecordSnapshot(ctx context.Context, id string, epoch int64, s client.Snapshot) (client.Attempt, error)
}

// SnapshotTimeout bounds saving a snapshot and reporting it, push included.
const SnapshotTimeout = 60 * time.Second

// SaveSnapshot saves the state of worktree as the snapshot of lease's
// attempt (package snapshot) and reports it to warp through api (nil: not
// reported): its commit, the branch, the remote; a worktree already gone
// is reported as such, a snapshot that failed with why. With push the ref
// also goes to the remote, within snapshot.Options' bound. It runs after
// the exit report, never before. A report warp refuses as a second one
// (409: this attempt has its snapshot) is not an error.
func SaveSnapshot(ctx context.Context, api SnapshotAPI, worktree string, lease gyrumdir.Lease, push bool, log *slog.Logger) (client.Snapshot, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), SnapshotTimeout)
	defer cancel()
	r, err := snapshot.Take(ctx, worktree, lease.Ticket, lease.Epoch, snapshot.Options{Push: push})
	s := client.Snapshot{State: r.State, Commit: r.Commit, Ref: r.Ref, Base: r.Base, Branch: r.Branch, Remote: r.Remote,
		Pushed: r.Pushed, Host: lease.Host, Detail: r.Detail}
	if err != nil {
		if errors.Is(err, snapshot.ErrNotRepo) {
			log.Info("no snapshot: the worktree is not in a git repository", "dir", worktree)
			return client.Snapshot{}, err
		}
		s = client.Snapshot{State: client.SnapshotFailed, Host: lease.Host, Detail: clip(err.Error(), 1000)}
		log.Warn("snapshot failed", "err", err)
	} else {
		log.Info("snapshot saved", "state", r.State, "commit", r.Commit, "ref", r.Ref, "existed", r.Existed, "pushed", r.Pushed, "detail", r.Detail)
	}
	if api == nil {
		return s, err
	}
	if _, rerr := api.RecordSnapshot(ctx, lease.Ticket, lease.Epoch, s); rerr != nil {
		if errors.Is(rerr, client.ErrConflict) {
			log.Info("warp has this attempt's snapshot already: it stays", "err", rerr)
		} else {
			log.Warn("report the snapshot", "err", rerr)
			return s, errors.Join(err, rerr)
		}
	}
	return s, err
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
