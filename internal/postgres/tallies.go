package postgres

import (
	"context"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

// EventTallies implements warp.Tx: a range read of events (kind, at) per kind.
func (t *tx) EventTallies(ctx context.Context, kinds []warp.EventKind, since time.Time, limit int) ([]warp.EventTally, error) {
	ks := make([]string, len(kinds))
	for i, k := range kinds {
		ks[i] = string(k)
	}
	rows, err := t.tx.Query(ctx, `SELECT at / 3600000000000 AS h, kind,
		CASE WHEN kind IN ('verdict-changed', 'mode-changed') THEN coalesce(data->>'to', '') ELSE coalesce(data->>'reason', '') END AS k,
		count(*) FROM events WHERE kind = ANY($1) AND at >= $2 GROUP BY 1, 2, 3 ORDER BY 1, 2, 3 LIMIT $3`,
		ks, ts(since), limitArg(limit))
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []warp.EventTally
	for rows.Next() {
		var h int64
		var e warp.EventTally
		var kind string
		if err := rows.Scan(&h, &kind, &e.Key, &e.N); err != nil {
			return nil, translate(err)
		}
		e.Hour, e.Kind = time.Unix(h*3600, 0).UTC(), warp.EventKind(kind)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err)
	}
	return out, nil
}

// HostsBySchemaPerHour implements warp.Tx: the hour rows of
// heartbeat_counts from since's hour on.
func (t *tx) HostsBySchemaPerHour(ctx context.Context, since time.Time, limit int) ([]warp.SchemaHour, error) {
	from := since.Unix() - since.Unix()%3600
	rows, err := t.tx.Query(ctx, `SELECT bucket, v, count(*) FROM (
			SELECT bucket, host, max(schema_version) AS v FROM heartbeat_counts
			WHERE span = 3600 AND bucket >= $1 GROUP BY bucket, host) AS hh
		GROUP BY bucket, v ORDER BY bucket, v LIMIT $2`, from, limitArg(limit))
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []warp.SchemaHour
	for rows.Next() {
		var b, n int64
		var v int32
		if err := rows.Scan(&b, &v, &n); err != nil {
			return nil, translate(err)
		}
		out = append(out, warp.SchemaHour{Hour: time.Unix(b, 0).UTC(), SchemaVersion: int(v), Hosts: int(n)})
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err)
	}
	return out, nil
}
