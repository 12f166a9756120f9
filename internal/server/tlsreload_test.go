package server_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/internal/server"
)

// writePair writes a self-signed certificate for cn, stamped at mod.
func writePair(t *testing.T, dir, cn string, mod time.Time) (string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	cert, keyf := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	require.NoError(t, os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyf, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600))
	require.NoError(t, os.Chtimes(cert, mod, mod))
	require.NoError(t, os.Chtimes(keyf, mod, mod))
	return cert, keyf
}

func commonName(t *testing.T, r *server.CertReloader) string {
	t.Helper()
	c, err := r.GetCertificate(nil)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	require.NoError(t, err)
	return leaf.Subject.CommonName
}

func TestARenewedCertificateIsServedWithoutARestart(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	cert, key := writePair(t, dir, "first", now)
	r, err := server.NewCertReloader(cert, key, nil)
	require.NoError(t, err)
	assert.Equal(t, "first", commonName(t, r))
	writePair(t, dir, "renewed", now.Add(time.Minute))
	assert.Equal(t, "renewed", commonName(t, r))
}

func TestABrokenRenewalKeepsTheLastGoodCertificate(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	cert, key := writePair(t, dir, "good", now)
	r, err := server.NewCertReloader(cert, key, nil)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(cert, []byte("not a certificate"), 0o600))
	later := now.Add(time.Minute)
	require.NoError(t, os.Chtimes(cert, later, later))
	assert.Equal(t, "good", commonName(t, r))
}

func TestMissingFilesFailAtStart(t *testing.T) {
	_, err := server.NewCertReloader("/nonexistent/tls.crt", "/nonexistent/tls.key", nil)
	assert.ErrorContains(t, err, "tls certificate")
}
