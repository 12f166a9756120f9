// Package tlsreload serves a TLS certificate from files and picks up a renewed certificate (cert-manager, a
// rotated Secret) without a restart. It guarantees that a broken renewal never takes the server down: if the new
// files cannot be loaded, the last good certificate is still served and the error is logged once per change.
package tlsreload

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// Reloader loads a key pair and reloads it when either file changes.
type Reloader struct {
	certFile, keyFile string
	log               *slog.Logger

	mu     sync.Mutex
	cert   *tls.Certificate
	loaded [2]stamp // of certFile and keyFile when cert was last loaded
}

// stamp tells a renewed file from the loaded one without reading it.
type stamp struct {
	mod  time.Time
	size int64
}

// New loads the key pair once, failing if it cannot.
func New(certFile, keyFile string, log *slog.Logger) (*Reloader, error) {
	r := &Reloader{certFile: certFile, keyFile: keyFile, log: log}
	if err := r.reload(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *Reloader) reload() error {
	var now [2]stamp
	for i, f := range [2]struct{ what, path string }{{"tls certificate", r.certFile}, {"tls key", r.keyFile}} {
		fi, err := os.Stat(f.path)
		if err != nil {
			return fmt.Errorf("%s: %w", f.what, err)
		}
		now[i] = stamp{fi.ModTime(), fi.Size()}
	}
	if r.cert != nil && now == r.loaded {
		return nil
	}
	r.loaded = now
	c, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("load tls key pair %s, %s: %w", r.certFile, r.keyFile, err)
	}
	r.cert = &c
	return nil
}

// GetCertificate is tls.Config.GetCertificate.
func (r *Reloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.reload(); err != nil && r.log != nil {
		r.log.Warn("keeping the previous TLS certificate", "error", err.Error())
	}
	return r.cert, nil
}
