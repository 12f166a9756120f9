package manifest_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"

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

// FuzzDocs checks that a stream Docs reads without error is read whole: kubectl's document splitter
// (k8s.io/apimachinery's YAMLReader) cuts it, and the YAML parser, which knows every line break YAML does, finds
// no more documents in its pieces than Docs returned. The splitter, not the parser, decides where a document
// starts: "---#0" is a separator and a comment to kubectl, and a plain scalar to the parser. Seeds are in
// testdata/fuzz/FuzzDocs.
func FuzzDocs(f *testing.F) {
	f.Add([]byte("a: 1\n---\nb: 2\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		docs, stop := manifest.Docs("stdin", data)
		if stop != nil {
			return
		}
		if found, ok := kubectlDocuments(data); ok && found > len(docs) {
			t.Fatalf("read %d documents of %d", len(docs), found)
		}
	})
}

// kubectlDocuments is how many non-empty documents yaml.v3 finds in the pieces kubectl's splitter cuts data into;
// ok is false when either refuses data.
func kubectlDocuments(data []byte) (int, bool) {
	pieces := k8syaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	found := 0
	for {
		piece, err := pieces.Read()
		if errors.Is(err, io.EOF) {
			return found, true
		} else if err != nil {
			return 0, false
		}
		n, ok := yamlDocuments(piece)
		if !ok {
			return 0, false
		}
		found += n
	}
}

// yamlDocuments is how many non-empty documents yaml.v3 finds in data; ok is false when it refuses data.
func yamlDocuments(data []byte) (int, bool) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	found := 0
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			return found, true
		} else if err != nil {
			return 0, false
		}
		if len(doc.Content) > 0 && (doc.Content[0].Kind != yaml.ScalarNode || doc.Content[0].Tag != "!!null") {
			found++
		}
	}
}
