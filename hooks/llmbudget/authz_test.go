package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
)

// authz's command line: what it cannot run is a usage error (status 2); a configuration it cannot honour fails
// before it talks to any API server (status 1), naming the file and the key.
func TestAuthzRefusesACommandLineOrConfigurationItCannotHonour(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "authz.yaml")
	assert.NoError(t, os.WriteFile(bad, []byte("gateways: [{name: g, mode: source}]\n"), 0o600))
	byCert := filepath.Join(dir, "identities.yaml")
	assert.NoError(t, os.WriteFile(byCert, []byte("gateways: [{name: g, identities: [spiffe://td/ns/gw/sa/gw], "+
		"mode: spiffe}]\n"), 0o600))
	cases := map[string]struct {
		args   []string
		code   int
		stderr string
	}{
		"no --config": {[]string{"authz"}, 2, "llmbudget authz: --config is required"},
		"half of TLS": {[]string{"authz", "--config", bad, "--tls-key-file", "k"}, 2,
			"--tls-cert-file and --tls-key-file go together"},
		"a client CA without TLS": {[]string{"authz", "--config", bad, "--tls-client-ca-file", "ca"}, 2,
			"--tls-client-ca-file needs --tls-cert-file"},
		"a tiny header bound": {[]string{"authz", "--config", bad, "--max-header-bytes", "10"}, 2,
			"--max-header-bytes (at least 1024)"},
		"a Pod name that cannot name a Lease": {[]string{"authz", "--config", bad, "--lease-namespace",
			"llmbudget-system", "--pod-name", "Not_A_Pod"}, 2, `--pod-name, --lease-duration, --lease-renew-interval: ` +
			`pod name "Not_A_Pod"`},
		"a Lease namespace without a Pod name": {[]string{"authz", "--config", bad, "--lease-namespace",
			"llmbudget-system", "--pod-name", ""}, 2, `pod name ""`},
		"a renewal not well within the Lease's duration": {[]string{"authz", "--config", bad, "--lease-namespace",
			"llmbudget-system", "--pod-name", "authz-0", "--lease-renew-interval", "40s"}, 2,
			"renew interval 40s: want above 0 and at most half the lease duration 1m0s"},
		"a missing file": {[]string{"authz", "--config", filepath.Join(dir, "none.yaml")}, 1,
			"llmbudget authz: --config: open "},
		"a gateway trusting every peer": {[]string{"authz", "--config", bad}, 1,
			"gateways[0].addresses: Required value: give addresses or identities, or every peer would be trusted"},
		"a gateway's identities without a client CA, which no certificate could match": {
			[]string{"authz", "--config", byCert}, 1, "llmbudget authz: --config " + byCert + ": " +
				"gateways[0].identities: Forbidden: matches only a client certificate verified against " +
				"--tls-client-ca-file, which is not given"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			code, _, stderr := runProgram(tc.args, "")
			assert.Equal(t, tc.code, code)
			assert.Contains(t, stderr, tc.stderr)
		})
	}
}
