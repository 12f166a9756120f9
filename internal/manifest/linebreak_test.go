package manifest_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every line break YAML's parsers know, other than LF: each stream is two budgets and their ConfigMaps, four
// documents, written with that break alone.
func TestAStreamWhoseLineBreaksTheSplitterDoesNotSeeIsReadWholeOrRefused(t *testing.T) {
	stream := validBudget + "---\n" + spendConfigMap + "---\n" + strings.ReplaceAll(validBudget, "team-ml", "team-b") +
		"---\n" + strings.ReplaceAll(spendConfigMap, "team-ml", "team-b")
	cases := map[string]struct {
		brk  string
		want string // "" when the four documents are read
	}{
		"CRLF is read whole":       {"\r\n", ""},
		"CR alone is refused":      {"\r", "CR alone"},
		"NEL is refused":           {"\u0085", "NEL (U+0085)"},
		"U+2028 is refused":        {"\u2028", "U+2028 (LINE SEPARATOR)"},
		"U+2029 is refused":        {"\u2029", "U+2029 (PARAGRAPH SEPARATOR)"},
		"mixed breaks are refused": {"\n", "CR alone"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			text := strings.ReplaceAll(stream, "\n", c.brk)
			if name == "mixed breaks are refused" {
				text = strings.Replace(stream, "---\n", "\r---\r", 2)
			}
			set, err := readText(t, text)
			if c.want == "" {
				require.NoError(t, err)
				assert.Len(t, set.Budgets, 2)
				assert.Len(t, set.ConfigMaps, 2)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), "where kubectl's splitter finds one: the text breaks lines with "+c.want)
			assert.Contains(t, err.Error(), "refused rather than read in part")
		})
	}
}

func TestALoneLineSeparatorInsideAValueIsNoReasonToRefuse(t *testing.T) {
	text := strings.Replace(validBudget, "metadata:\n", "metadata:\n  annotations:\n    note: \"a\u2028b\\rc\"\n", 1) +
		"---\n" + spendConfigMap
	set, err := readText(t, text)
	require.NoError(t, err)
	assert.Len(t, set.Budgets, 1)
	assert.Len(t, set.ConfigMaps, 1)
}
