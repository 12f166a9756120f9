// Package auth guards the hook endpoints with a bearer token, the credential
// Metacontroller sends when a controller's webhook has `authorization`
// configured (Authorization: Bearer <Secret value>).
//
// It guarantees constant-time comparison, a 401 with a one-line reason for a
// missing or wrong token, and that a rotated Secret is picked up without a
// restart: the token file is re-read when its modification time changes.
package auth

import (
	"bytes"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// FileToken is a bearer token kept in a file, such as a mounted Secret key.
type FileToken struct {
	path string

	mu      sync.Mutex
	token   []byte
	modTime time.Time
	size    int64
}

// NewFileToken reads the token in path; surrounding white space is ignored
// because Secrets made with `echo` carry a trailing newline.
func NewFileToken(path string) (*FileToken, error) {
	t := &FileToken{path: path}
	if _, err := t.Token(); err != nil {
		return nil, err
	}
	return t, nil
}

// Token returns the current token, re-reading the file if it changed.
func (t *FileToken) Token() ([]byte, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fi, err := os.Stat(t.path)
	if err != nil {
		return nil, fmt.Errorf("read token file: %w", err)
	}
	if t.token != nil && fi.ModTime().Equal(t.modTime) && fi.Size() == t.size {
		return t.token, nil
	}
	b, err := os.ReadFile(t.path)
	if err != nil {
		return nil, fmt.Errorf("read token file: %w", err)
	}
	tok := bytes.TrimSpace(b)
	if len(tok) == 0 {
		return nil, fmt.Errorf("token file %s is empty", t.path)
	}
	t.token, t.modTime, t.size = tok, fi.ModTime(), fi.Size()
	return t.token, nil
}

// TokenSource yields the expected token.
type TokenSource interface {
	Token() ([]byte, error)
}

// Require wraps next so that every path except those in open needs the
// bearer token.
func Require(next http.Handler, src TokenSource, open ...string) http.Handler {
	exempt := make(map[string]bool, len(open))
	for _, p := range open {
		exempt[p] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if exempt[r.URL.Path] {
			next.ServeHTTP(w, r)
			return
		}
		if err := check(r.Header.Get("Authorization"), src); err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="llmbudget"`)
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, err.Error()+"\n")
			return
		}
		next.ServeHTTP(w, r)
	})
}

var (
	errMissing = errors.New("unauthorized: missing bearer token (configure the controller's webhook.authorization)")
	errWrong   = errors.New("unauthorized: wrong bearer token")
)

func check(header string, src TokenSource) error {
	scheme, got, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || got == "" {
		return errMissing
	}
	want, err := src.Token()
	if err != nil {
		// Fail closed: without a readable token nobody is let in.
		return fmt.Errorf("unauthorized: %v", err)
	}
	if subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), want) != 1 {
		return errWrong
	}
	return nil
}
