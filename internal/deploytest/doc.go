// Package deploytest checks the deployment files under deploy/ against the
// code they run, without running them: the Dockerfile (parsed: builder,
// static non-root final image, volume, port, and an ENTRYPOINT whose flags
// `warp serve` has), the systemd unit (its hardening keys, `systemd-analyze
// verify` and `systemd-analyze security` where systemd-analyze is
// installed) and the token-file example (parsed by the server's own
// parser). Docker cannot run in CI, so nothing here builds an image.
package deploytest
