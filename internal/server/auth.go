// Bearer auth: Require guards the hook endpoints with the bearer token Metacontroller sends when a controller's
// webhook has `authorization` configured. It guarantees constant-time comparison, a 401 with a one-line
// reason for a missing or wrong token, and that a rotated Secret takes effect as soon as the file's content
// changes, whatever its size and modification time: the file is read on every check. A token file that cannot
// be read is logged with its path; the caller only sees "unauthorized".

package server

import (
	"bytes"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
)

// FileToken is a bearer token kept in a file, such as a mounted Secret key.
type FileToken struct{ path string }

// NewFileToken reads the token in path, trimmed of white space: Secrets made with `echo` end in a newline.
func NewFileToken(path string) (*FileToken, error) {
	t := &FileToken{path: path}
	if _, err := t.Token(); err != nil {
		return nil, err
	}
	return t, nil
}

// Token returns the file's current content; a mounted Secret is a few bytes on tmpfs, cheap to read per call.
func (t *FileToken) Token() ([]byte, error) {
	b, err := os.ReadFile(t.path)
	if err != nil {
		return nil, fmt.Errorf("read token file: %w", err)
	}
	tok := bytes.TrimSpace(b)
	if len(tok) == 0 {
		return nil, fmt.Errorf("token file %s is empty", t.path)
	}
	return tok, nil
}

// Require wraps next so that all paths but those in open need the bearer token; failures to read it go to logger.
func Require(next http.Handler, tok *FileToken, logger *slog.Logger, open ...string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if slices.Contains(open, r.URL.Path) {
			next.ServeHTTP(w, r)
		} else if reason := refusal(r, tok, logger); reason != "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="llmbudget"`)
			http.Error(w, reason, http.StatusUnauthorized)
		} else {
			next.ServeHTTP(w, r)
		}
	})
}

// refusal says why r does not carry the token, or "" when it does.
func refusal(r *http.Request, tok *FileToken, logger *slog.Logger) string {
	scheme, got, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || got == "" {
		return "unauthorized: missing bearer token (configure the controller's webhook.authorization)"
	}
	want, err := tok.Token()
	if err != nil {
		// Fail closed; the error names the file, so only the log gets it.
		logger.LogAttrs(r.Context(), slog.LevelError, "cannot read the bearer token; refusing every hook call",
			slog.String("error", err.Error()))
		return "unauthorized"
	}
	if subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), want) != 1 {
		return "unauthorized: wrong bearer token"
	}
	return ""
}
