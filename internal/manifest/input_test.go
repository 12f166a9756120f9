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
		assert.Contains(t, err.Error(), ": larger than 1 MiB, the most llmbudget reads in one run: split it")
	}
	_, err := Read([]string{"-"}, strings.NewReader(big[:1<<20]))
	assert.EqualError(t, err, "stdin: is empty: no YAML document", "at the bound, it is read")
}

func TestInputsAddUpToOneBound(t *testing.T) {
	defer func(n int64) { maxInputBytes = n }(maxInputBytes)
	maxInputBytes = 1 << 20
	dir := t.TempDir()
	half := strings.Repeat("# padding\n", 1<<16) + "a: 1\n" // 640 KiB, under the bound alone
	var names []string
	for _, name := range []string{"a.yaml", "b.yaml"} {
		names = append(names, filepath.Join(dir, name))
		require.NoError(t, os.WriteFile(names[len(names)-1], []byte(half), 0o600))
	}
	_, err := Read(names[:1], nil)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "MiB", "one file alone is read")
	for in, second := range map[[2]string]string{{names[0], names[1]}: names[1], {names[0], "-"}: "stdin"} {
		_, err = Read(in[:], strings.NewReader(half))
		require.Error(t, err)
		assert.Contains(t, err.Error(), second+": the inputs add up to more than 1 MiB, the most llmbudget reads in one run")
	}
}

func TestAFileNamedTwiceIsReadOnce(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a.yaml")
	require.NoError(t, os.WriteFile(file, []byte("a: 1\n"), 0o600))
	var read []string
	_, err := ReadInputs([]string{dir, file, filepath.Join(dir, ".", "a.yaml")}, nil, func(in Input) error {
		read = append(read, in.Name)
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, []string{file}, read)
}
