package warp

import "time"

// HeartbeatSum is the heartbeats of one host and schema version in one
// 1-second adoption bucket (unix seconds), summed over a batch.
type HeartbeatSum struct {
	Host          string
	SchemaVersion int
	Bucket        int64
	N             int64
}

// HostSeen is what a batch's counts leave in one host's row, as
// RecordHeartbeat would count by count: a new row takes the token of the
// host's first count; the row gets the schema version and time of its
// last count (a stored row keeps a newer time).
type HostSeen struct {
	Host, Token   string
	SchemaVersion int
	At            time.Time
}

// SumHeartbeats folds the counts of a batch (HeartbeatBatchTx.
// RecordHeartbeats) into one sum per (host, schema version, bucket) and
// one row per host, each in order of first appearance.
func SumHeartbeats(cs []HeartbeatCount) ([]HeartbeatSum, []HostSeen) {
	type key struct {
		host   string
		schema int
		bucket int64
	}
	at := map[key]int{}
	var sums []HeartbeatSum
	seen := map[string]int{}
	var hosts []HostSeen
	for _, c := range cs {
		k := key{c.Host, c.SchemaVersion, c.At.Unix()}
		if i, ok := at[k]; ok {
			sums[i].N += c.N
		} else {
			at[k] = len(sums)
			sums = append(sums, HeartbeatSum{Host: c.Host, SchemaVersion: c.SchemaVersion, Bucket: k.bucket, N: c.N})
		}
		if i, ok := seen[c.Host]; !ok {
			seen[c.Host] = len(hosts)
			hosts = append(hosts, HostSeen{Host: c.Host, Token: c.Token, SchemaVersion: c.SchemaVersion, At: c.At})
		} else if !c.At.Before(hosts[i].At) {
			hosts[i].SchemaVersion, hosts[i].At = c.SchemaVersion, c.At
		}
	}
	return sums, hosts
}
