package benchkit

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTheDeployedSpendWriterIsOneRunOfTheDeploymentsArgumentsButPrometheus(t *testing.T) {
	w, err := DeployedSpendWriter()
	require.NoError(t, err)
	assert.Contains(t, w.Args, "--all")
	assert.Positive(t, w.MemLimit)
	for _, a := range w.Args {
		assert.False(t, strings.HasPrefix(a, "--prometheus="), a)
		assert.False(t, loopFlag(a), "a flag of the loop: %s", a)
		assert.NotContains(t, a, "$(POD_NAMESPACE)")
	}
	assert.Contains(t, w.Loop, "--loop")
	for _, a := range w.Loop {
		assert.True(t, loopFlag(a), "not a flag of the loop: %s", a)
		assert.False(t, strings.HasPrefix(a, "--metrics-addr"), a)
	}
}

func TestARunKeepsTheWritersLinesAndExitAndItsTailIsCut(t *testing.T) {
	w := SpendWriter{Args: []string{"-c"}, MemLimit: 64 << 20}
	r, err := w.Run("/bin/sh", `echo "GOMEMLIMIT=$GOMEMLIMIT" >&2; echo second >&2; echo a-third-line >&2; exit 3`)
	require.NoError(t, err)
	assert.Equal(t, 3, r.Exit)
	assert.Equal(t, []string{"GOMEMLIMIT=67108864", "second", "a-third-line"}, r.Lines)
	assert.Positive(t, r.RSS)
	assert.Equal(t, "\n         secon\n         a-thi", r.Tail(2, 5))
}

func TestARunOfABinaryThatDoesNotStartIsAnError(t *testing.T) {
	_, err := SpendWriter{}.Run("/nonexistent/llmbudget")
	assert.Error(t, err)
}
