package main

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAdmissionCheckFlagsAreCheckedBeforeItTalksToTheAPIServer(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "")
	tests := []struct {
		name string
		args []string
		bad  string // in the usage error; empty: accepted
	}{
		{"a lease namespace and the defaults are enough", []string{"--leader-election-namespace", "ops"}, ""},
		{"without leader election no namespace is needed", []string{"--leader-elect=false"}, ""},
		{"Retry is a hold", []string{"--leader-elect=false", "--hold", "Retry"}, ""},
		{"leader election needs its namespace", nil, "--leader-elect needs"},
		{"an unknown hold is refused", []string{"--leader-elect=false", "--hold", "Later"}, `not "Later"`},
		{"no workers is refused", []string{"--leader-elect=false", "--workers", "0"}, "--workers"},
		{"workers are bounded", []string{"--leader-elect=false", "--workers", "65"}, "--workers"},
		{"a negative resync is refused", []string{"--leader-elect=false", "--resync", "-1s"}, "--resync"},
		{"an argument is refused", []string{"--leader-elect=false", "extra"}, "unexpected argument"},
		{"an unknown log level is refused", []string{"--leader-elect=false", "--log-level", "loud"}, "--log-level"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseAdmissionCheck(tt.args)
			if tt.bad == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.bad)
			var u *usageError
			assert.True(t, errors.As(err, &u), "a usage error (exit status 2): %v", err)
		})
	}
}

func TestTheLeaseNamespaceDefaultsToThePodsOwn(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "llmbudget-system")
	o, err := parseAdmissionCheck(nil)
	require.NoError(t, err)
	assert.Equal(t, "llmbudget-system", o.leaseNamespace)
	assert.Equal(t, "llmbudget-admissioncheck", o.leaseName)
}
