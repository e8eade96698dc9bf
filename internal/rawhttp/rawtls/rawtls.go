// Package rawtls gives rawhttp its https: a TLS handshake over crypto/tls,
// kept out of package rawhttp so that a binary that speaks plain http
// never links crypto/tls.
package rawtls

import (
	"context"
	"crypto/tls"
	"net"
)

// Handshake returns a rawhttp.Client.TLS function over cfg (nil: the
// defaults, system roots). cfg is cloned, never changed; ServerName is set
// from the URL's host when cfg has none, and the only protocol offered is
// http/1.1 when cfg lists any (rawhttp speaks nothing else).
func Handshake(cfg *tls.Config) func(ctx context.Context, conn net.Conn, serverName string) (net.Conn, error) {
	return func(ctx context.Context, conn net.Conn, serverName string) (net.Conn, error) {
		c := &tls.Config{}
		if cfg != nil {
			c = cfg.Clone()
		}
		if c.ServerName == "" {
			c.ServerName = serverName
		}
		if len(c.NextProtos) > 0 {
			c.NextProtos = []string{"http/1.1"}
		}
		tc := tls.Client(conn, c)
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, err
		}
		return tc, nil
	}
}
