package server_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/internal/server"
)

// missingToken is the answer to a call without a bearer token.
const missingToken = "unauthorized: missing bearer token (configure the controller's webhook.authorization)\n"

func tokenFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

func TestRequireChecksTheBearerToken(t *testing.T) {
	tok, err := server.NewFileToken(tokenFile(t, "s3cret\n"))
	require.NoError(t, err)
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	h := server.Require(ok, tok, slog.New(slog.DiscardHandler), "/healthz")
	cases := map[string]struct {
		path, header string
		status       int
		body         string
	}{
		"no header is refused":           {"/budget/sync", "", 401, missingToken},
		"basic auth is refused":          {"/budget/sync", "Basic czNjcmV0", 401, missingToken},
		"a wrong token is refused":       {"/budget/sync", "Bearer s3cre", 401, "unauthorized: wrong bearer token\n"},
		"a longer token is refused":      {"/budget/sync", "Bearer s3cret2", 401, "unauthorized: wrong bearer token\n"},
		"the right token passes":         {"/budget/sync", "Bearer s3cret", 418, ""},
		"the scheme is case-insensitive": {"/budget/sync", "bearer s3cret", 418, ""},
		"an open path needs no token":    {"/healthz", "", 418, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, tc.path, nil)
			if tc.header != "" {
				r.Header.Set("Authorization", tc.header)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			assert.Equal(t, tc.status, w.Code)
			if tc.status == 401 {
				assert.Equal(t, tc.body, w.Body.String())
				assert.Equal(t, `Bearer realm="llmbudget"`, w.Header().Get("WWW-Authenticate"))
			}
		})
	}
}

func TestFileTokenFollowsRotation(t *testing.T) {
	p := tokenFile(t, "one")
	tok, err := server.NewFileToken(p)
	require.NoError(t, err)
	got, err := tok.Token()
	require.NoError(t, err)
	assert.Equal(t, "one", string(got))

	later := time.Now().Add(time.Minute)
	require.NoError(t, os.WriteFile(p, []byte("two\n"), 0o600))
	require.NoError(t, os.Chtimes(p, later, later))
	got, err = tok.Token()
	require.NoError(t, err)
	assert.Equal(t, "two", string(got))
}

func TestFileTokenFollowsARotationThatKeepsSizeAndModTime(t *testing.T) {
	p := tokenFile(t, "one")
	fi, err := os.Stat(p)
	require.NoError(t, err)
	tok, err := server.NewFileToken(p)
	require.NoError(t, err)

	// Same length, and the modification time put back: only the content differs.
	require.NoError(t, os.WriteFile(p, []byte("two"), 0o600))
	require.NoError(t, os.Chtimes(p, fi.ModTime(), fi.ModTime()))
	got, err := tok.Token()
	require.NoError(t, err)
	assert.Equal(t, "two", string(got))
}

func TestAnUnreadableTokenFailsClosed(t *testing.T) {
	_, err := server.NewFileToken(filepath.Join(t.TempDir(), "absent"))
	assert.ErrorContains(t, err, "read token file")
	_, err = server.NewFileToken(tokenFile(t, " \n"))
	assert.ErrorContains(t, err, "is empty")
}

func TestAnUnreadableTokenIsLoggedWithItsPathAndAnsweredBarely(t *testing.T) {
	cases := map[string]func(t *testing.T, path string){
		"a removed file": func(t *testing.T, path string) { require.NoError(t, os.Remove(path)) },
		"an emptied file": func(t *testing.T, path string) {
			require.NoError(t, os.WriteFile(path, []byte("\n"), 0o600))
		},
	}
	for name, breakIt := range cases {
		t.Run(name, func(t *testing.T) {
			p := tokenFile(t, "x")
			tok, err := server.NewFileToken(p)
			require.NoError(t, err)
			breakIt(t, p)
			var logs bytes.Buffer
			h := server.Require(http.NotFoundHandler(), tok, slog.New(slog.NewTextHandler(&logs, nil)))
			r := httptest.NewRequest(http.MethodPost, "/budget/sync", nil)
			r.Header.Set("Authorization", "Bearer x")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			assert.Equal(t, 401, w.Code)
			assert.Equal(t, "unauthorized\n", w.Body.String())
			assert.Contains(t, logs.String(), p)
		})
	}
}
