// Package deploytest checks the deployment files under deploy/ against the
// code they run, without running them: the Dockerfile (parsed: builder,
// static non-root final image, volume, port, and an ENTRYPOINT whose flags
// `warp serve` has), the systemd unit (its hardening keys, `systemd-analyze
// verify` and `systemd-analyze security` where systemd-analyze is
// installed) and the token-file example (parsed by the server's own
// parser). Docker cannot run in CI, so nothing here builds an image.
//
// The monitoring files are checked the same way: the Grafana dashboard
// (deploy/grafana/warp.json) and the Prometheus alert rules
// (deploy/prometheus/warp-alerts.yml) parse, every metric, label and label
// value their PromQL names is on the /metrics of a live warp driven through
// claims, heartbeats and a sweep, and promtool ($WARP_TEST_PROMTOOL, built
// by .ci/install-promtool; required when CI=true) accepts the rules and the
// dashboard's queries and passes the alerts' unit tests
// (testdata/warp-alerts.test.yml).
package deploytest
