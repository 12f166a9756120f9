package manifest

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingReader counts what is read of r.
type countingReader struct {
	r    io.Reader
	read int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.read += int64(n)
	return n, err
}

// repeated is an io.Reader of pattern repeated to n bytes, never held whole.
type repeated struct {
	pattern string
	n, at   int64
}

func (r *repeated) Read(p []byte) (int, error) {
	if r.at == r.n {
		return 0, io.EOF
	}
	k := min(int64(len(p)), r.n-r.at)
	for i := range p[:k] {
		p[i] = r.pattern[(r.at+int64(i))%int64(len(r.pattern))]
	}
	r.at += k
	return int(k), nil
}

func TestADocumentPastMaxDocumentBytesIsRefusedBeforeItIsReadWhole(t *testing.T) {
	const size = 52_000_000 // a ConfigMap of one 52 MB string, well past what the API server stores
	cases := map[string]struct{ header, filler string }{
		"in one line": {"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: spend\ndata:\n  total: ", "a"},
		"in a literal block": {"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: spend\ndata:\n  total: |\n",
			"    " + strings.Repeat("a", 75) + "\n"},
		"after a small object": {"kind: ConfigMap\nmetadata:\n  name: a\n---\nkind: ConfigMap\ndata:\n  a: ", "a"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := &countingReader{r: io.MultiReader(strings.NewReader(tc.header), &repeated{pattern: tc.filler, n: size})}
			err := EachDocIn("big.yaml", in, func(Doc) {})
			require.NotNil(t, err)
			assert.Contains(t, err.Error(), fmt.Sprintf("more than %d bytes", MaxDocumentBytes))
			assert.Contains(t, err.Error(), "MaxDocumentBytes")
			assert.Less(t, in.read, int64(MaxDocumentBytes+64<<10), "read past the bound")
		})
	}
}

func TestAListPastMaxDocumentBytesIsStillRead(t *testing.T) {
	defer func(n int) { maxDocumentBytes = n }(maxDocumentBytes)
	maxDocumentBytes = 4 << 10
	item := "- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: spend-%d\n    namespace: a\n  data:\n" +
		"    total: \"1.00\"\n"
	var list bytes.Buffer
	list.WriteString("apiVersion: v1\nitems:\n")
	for i := range 100 {
		fmt.Fprintf(&list, item, i)
	}
	list.WriteString("kind: List\nmetadata: {}\n")
	require.Greater(t, list.Len(), maxDocumentBytes)
	docs, err := Docs("list.yaml", list.Bytes())
	require.Nil(t, err)
	assert.Len(t, docs, 1)
}
