package manifest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAnInputOverTheBoundIsRefusedBeforeItIsParsed(t *testing.T) {
	defer func(n int64) { maxInputBytes = n }(maxInputBytes)
	maxInputBytes = 1 << 20
	big := strings.Repeat("# padding\n", 1<<17) // 1.25 MiB
	file := filepath.Join(t.TempDir(), "big.yaml")
	require.NoError(t, os.WriteFile(file, []byte(big), 0o600))
	for _, name := range []string{file, "-"} {
		_, err := Read([]string{name}, strings.NewReader(big))
		require.Error(t, err)
		assert.Contains(t, err.Error(), ": larger than 1 MiB, the most llmbudget reads from one input: split it")
	}
	_, err := Read([]string{"-"}, strings.NewReader(big[:1<<20]))
	assert.EqualError(t, err, "stdin: is empty: no YAML document", "at the bound, it is read")
}
