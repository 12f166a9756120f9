package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki holds the files of a throwaway public key infrastructure: one CA that signs the API
// server's serving certificate and the admin client certificate, and a separate key pair
// that signs service account tokens.
type pki struct {
	caCert       string
	servingCert  string
	servingKey   string
	adminCert    string
	adminKey     string
	saSigningKey string // private key, PEM (PKCS#8)
	saPublicKey  string // public key, PEM (PKIX)
}

type keyPair struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// newPKI writes every file into dir. Keys are ECDSA P-256: quick to generate and accepted
// everywhere Kubernetes reads keys.
func newPKI(dir string) (*pki, error) {
	p := &pki{
		caCert:       filepath.Join(dir, "ca.crt"),
		servingCert:  filepath.Join(dir, "apiserver.crt"),
		servingKey:   filepath.Join(dir, "apiserver.key"),
		adminCert:    filepath.Join(dir, "admin.crt"),
		adminKey:     filepath.Join(dir, "admin.key"),
		saSigningKey: filepath.Join(dir, "sa.key"),
		saPublicKey:  filepath.Join(dir, "sa.pub"),
	}
	now := time.Now().Add(-time.Hour) // tolerate small clock differences
	ca, err := issue(&x509.Certificate{
		Subject:               pkix.Name{CommonName: "llmbudget-test-ca"},
		NotBefore:             now,
		NotAfter:              now.Add(48 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("create CA: %w", err)
	}
	serving, err := issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:   now,
		NotAfter:    now.Add(48 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv4(10, 0, 0, 1)},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
	}, ca)
	if err != nil {
		return nil, fmt.Errorf("create serving certificate: %w", err)
	}
	// system:masters is bound to cluster-admin by the bootstrap RBAC policy.
	admin, err := issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "llmbudget-test-admin", Organization: []string{"system:masters"}},
		NotBefore:   now,
		NotAfter:    now.Add(48 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, ca)
	if err != nil {
		return nil, fmt.Errorf("create admin client certificate: %w", err)
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("create service account key: %w", err)
	}

	files := []struct {
		path  string
		write func(string) error
	}{
		{p.caCert, ca.writeCert},
		{p.servingCert, serving.writeCert},
		{p.servingKey, serving.writeKey},
		{p.adminCert, admin.writeCert},
		{p.adminKey, admin.writeKey},
		{p.saSigningKey, keyPair{key: saKey}.writeKey},
		{p.saPublicKey, func(path string) error { return writePublicKey(path, &saKey.PublicKey) }},
	}
	for _, f := range files {
		if err := f.write(f.path); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// issue creates a key and a certificate from template, signed by parent (self-signed when
// parent is nil).
func issue(template *x509.Certificate, parent *keyPair) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	template.SerialNumber = serial
	signerCert, signerKey := template, key
	if parent != nil {
		signerCert, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, template, signerCert, &key.PublicKey, signerKey)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &keyPair{cert: cert, key: key}, nil
}

func (k keyPair) writeCert(path string) error {
	return writePEM(path, "CERTIFICATE", k.cert.Raw)
}

func (k keyPair) writeKey(path string) error {
	der, err := x509.MarshalPKCS8PrivateKey(k.key)
	if err != nil {
		return fmt.Errorf("encode key for %s: %w", path, err)
	}
	return writePEM(path, "PRIVATE KEY", der)
}

func writePublicKey(path string, pub *ecdsa.PublicKey) error {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return fmt.Errorf("encode public key for %s: %w", path, err)
	}
	return writePEM(path, "PUBLIC KEY", der)
}

func writePEM(path, blockType string, der []byte) error {
	data := pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der})
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
