package serverproc

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStartLearnsTheAddressFromTheLineOfItsMessage(t *testing.T) {
	cmd, err := Command("/bin/sh", "-c", `echo 'not json' >&2
echo '{"msg":"other","addr":"127.0.0.1:1"}' >&2
echo '{"msg":"serving hooks","addr":"127.0.0.1:2"}' >&2
exec sleep 30`)
	require.NoError(t, err)
	s, err := Start(cmd, "serving hooks")
	require.NoError(t, err)
	defer s.Kill()
	assert.Equal(t, "127.0.0.1:2", s.Addr)
	rss, peak := s.Memory()
	assert.Positive(t, rss)
	assert.GreaterOrEqual(t, peak, rss)
	assert.GreaterOrEqual(t, s.Peak(), peak, "a high-water mark read again is no lower")
}

func TestStartFailsForAProcessThatExitsBeforeServing(t *testing.T) {
	tests := []struct {
		name   string
		script string
	}{
		{"one that logs nothing", "exit 0"},
		{"one that logs another message", `echo '{"msg":"other","addr":"127.0.0.1:1"}' >&2`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd, err := Command("/bin/sh", "-c", tt.script)
			require.NoError(t, err)
			_, err = Start(cmd, "serving hooks")
			assert.ErrorContains(t, err, "/bin/sh exited before serving")
		})
	}
}
