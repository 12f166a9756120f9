// TLS reload: a CertReloader serves a TLS certificate from files and picks up a renewed certificate (cert-manager, a
// rotated Secret) without a restart. It guarantees that a broken renewal never takes the server down: if the new
// files cannot be loaded, the last good certificate is still served and the error is logged once per change.

package server

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// CertReloader loads a key pair and reloads it when either file changes.
type CertReloader struct {
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

// NewCertReloader loads the key pair once, failing if it cannot.
func NewCertReloader(certFile, keyFile string, log *slog.Logger) (*CertReloader, error) {
	r := &CertReloader{certFile: certFile, keyFile: keyFile, log: log}
	if err := r.reload(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *CertReloader) reload() error {
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
func (r *CertReloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.reload(); err != nil && r.log != nil {
		r.log.Warn("keeping the previous TLS certificate", "error", err.Error())
	}
	return r.cert, nil
}
