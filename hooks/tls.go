package main

import (
	"crypto/tls"
	"net"
	"net/http"
)

// tlsListener wraps ln so that srv.Serve speaks TLS with srv.TLSConfig
// (which fetches the certificate per handshake, so renewals apply at once).
func tlsListener(ln net.Listener, srv *http.Server) net.Listener {
	cfg := srv.TLSConfig.Clone()
	cfg.NextProtos = []string{"http/1.1"} // Metacontroller speaks HTTP/1.1
	return tls.NewListener(ln, cfg)
}
