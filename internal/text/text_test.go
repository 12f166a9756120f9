package text

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAbbreviateKeepsEchoedInputSmall(t *testing.T) {
	cases := map[string]struct {
		in   string
		n    int
		want string
	}{
		"a short message is kept":         {"spend read", 16, "spend read"},
		"a long one is cut and marked":    {"0123456789abcdef", 10, "0123456..."},
		"a cut never splits a character":  {"aaaaaaaéxyz", 11, "aaaaaaa..."},
		"exactly the bound is kept as is": {"0123456789", 10, "0123456789"},
		"a namespace's message is bounded": {
			strings.Repeat("x", 4096), 512, strings.Repeat("x", 512-3) + "...",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Abbreviate(tc.in, tc.n)
			assert.Equal(t, tc.want, got)
			assert.LessOrEqual(t, len(got), tc.n)
		})
	}
}

func TestQuoteShortensALongInputWithoutSplittingACharacter(t *testing.T) {
	long := strings.Repeat("a", quoteAt-1) + "é" + "tail"
	assert.Equal(t, `"`+strings.Repeat("a", quoteAt-1)+`"...`, Quote(long))
	assert.Equal(t, `"short"`, Quote("short"))
}
