package manifest_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/llmbudget/llmbudget/internal/manifest"
)

// FuzzRead checks that no input panics the reader, and that whatever it
// accepts as a budget is one the API would: named, and with a valid spec.
// Seeds are in testdata/fuzz/FuzzRead.
func FuzzRead(f *testing.F) {
	f.Add([]byte(validBudget + "---\n" + spendConfigMap))
	f.Add([]byte("\xff\xfea\x00:\x00 \x00b\x00\n\x00"))     // UTF-16 with a byte-order mark
	f.Add([]byte(spendConfigMap + "...\n# end\r\n--- x\n")) // an end marker, CRLF, a bad separator
	f.Fuzz(func(t *testing.T, data []byte) {
		set, err := manifest.Read([]string{"-"}, bytes.NewReader(data))
		if err != nil {
			if strings.TrimSpace(err.Error()) == "" {
				t.Fatal("an error without a message")
			}
			return
		}
		for _, b := range set.Budgets {
			if b.Name == "" || b.Namespace == "" {
				t.Fatalf("a budget without a name: %+v", b)
			}
			spec := b.Spec
			if err := spec.Validate().ToAggregate(); err != nil {
				t.Fatalf("accepted a budget whose spec is invalid: %v", err)
			}
		}
	})
}
