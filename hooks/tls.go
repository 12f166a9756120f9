package main

import (
	"crypto/tls"
	"net"
)

// tlsListener wraps ln so that it speaks TLS with base (which fetches the
// certificate per handshake, so renewals apply at once).
func tlsListener(ln net.Listener, base *tls.Config) net.Listener {
	cfg := base.Clone()
	cfg.NextProtos = []string{"http/1.1"} // Metacontroller speaks HTTP/1.1
	return tls.NewListener(ln, cfg)
}
