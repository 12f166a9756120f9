package manifest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/internal/manifest"
)

func TestReadRefusesWhatTheAPIServerRefusesForSizeNamingFieldAndLimit(t *testing.T) {
	withAnnotation := func(size int) string {
		notes := "metadata:\n  annotations:\n    notes: " + strings.Repeat("x", size) + "\n"
		return strings.Replace(validBudget, "metadata:\n", notes, 1)
	}
	withData := func(size int) string {
		return spendConfigMap + "  padding: " + strings.Repeat("x", size) + "\n"
	}
	cases := map[string]struct {
		text string
		want []string
	}{
		"annotations at the limit": {withAnnotation(256<<10 - len("notes")), nil},
		"annotations over 256 KiB": {withAnnotation(256 << 10),
			[]string{"4: LLMCostBudget team-ml/chatbot: metadata.annotations: Too long: may not be more than 262144 bytes"}},
		"a ConfigMap at 1 MiB": {withData(1<<20 - len("total-usd412.35padding")), nil},
		"a ConfigMap over 1 MiB": {withData(1<<20 - len("total-usd412.35padding") + 1),
			[]string{"6: ConfigMap team-ml/llm-spend: data: Too long: may not be more than 1048576 bytes"}},
		"an object over 1.5 MiB": {strings.Replace(spendConfigMap, "metadata:\n", "binaryData:\n  a: "+
			strings.Repeat("QUFB", 1<<18)+"\n  b: "+strings.Repeat("QUFB", 1<<17)+"\nmetadata:\n", 1),
			[]string{"1: ConfigMap team-ml/llm-spend: the object is 1573015 bytes of JSON: " +
				"Too long: may not be more than 1572864 bytes (1.5 MiB, what etcd stores per object by default)"}},
		"a ConfigMap key that is not one": {strings.Replace(spendConfigMap, "total-usd:", "total usd:", 1),
			[]string{`6: ConfigMap team-ml/llm-spend: data[total usd]: Invalid value: "total usd": a valid config key ` +
				`must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or ` +
				`'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := readText(t, tc.text+"---\n"+strings.Replace(validBudget, "name: chatbot", "name: other", 1))
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			assert.Equal(t, tc.want, problems(t, err))
		})
	}
}

func TestReadRefusesAKeyWithDailyLedgerAsItRefusesKeyPrefixWithTotal(t *testing.T) {
	ledger := strings.Replace(validBudget, "    key: total-usd\n",
		"    format: DailyLedger\n    keyPrefix: spend-\n    key: total-usd\n", 1)
	_, err := readText(t, ledger)
	assert.Equal(t, []string{"12: LLMCostBudget team-ml/chatbot: spec.costSource.key: Forbidden: costSource.key is only " +
		"allowed when costSource.format is Total; a DailyLedger reads keyPrefix"}, problems(t, err))

	_, err = readText(t, strings.Replace(ledger, "    key: total-usd\n", "", 1))
	assert.NoError(t, err)
}

func TestReadNamesTheLineOfAYAMLSyntaxErrorFromTheFilesStart(t *testing.T) {
	bad := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n bad: indent\n"
	cases := map[string]struct {
		text string
		want string
	}{
		"in the first document": {bad, "4: not valid YAML: did not find expected key"},
		"after two documents": {validBudget + "---\n" + spendConfigMap + "---\n" + bad,
			"23: not valid YAML: did not find expected key"},
		"after comments and separators": {"# c\n---\n--- # again\n\n" + bad, "8: not valid YAML: did not find expected key"},
		"after a leading separator":     {"---\n" + bad, "5: not valid YAML: did not find expected key"},
		"with CRLF line endings": {strings.ReplaceAll(spendConfigMap+"---\n"+bad, "\n", "\r\n"),
			"12: not valid YAML: did not find expected key"},
		"a key given twice in a later document": {spendConfigMap + "---\n" + spendConfigMap + "  total-usd: \"1\"\n",
			`16: not valid YAML: unmarshal errors: key "total-usd" already set in map`},
		"a separator followed by text": {spendConfigMap + "--- x\n", `8: not valid YAML: invalid Yaml document separator: x`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := readText(t, tc.text)
			assert.Equal(t, []string{tc.want}, problems(t, err))
		})
	}
}

func TestReadRefusesADocumentTheSplitterWouldReadOnlyInPart(t *testing.T) {
	// "..." ends a YAML document without a "---": kubectl's splitter sees one document, the parser two.
	set, err := readText(t, spendConfigMap+"...\n"+validBudget)
	assert.Equal(t, []string{"8: not valid YAML: did not find expected <document start>"}, problems(t, err),
		"the YAML-to-JSON conversion would have read the ConfigMap alone")
	assert.Empty(t, set.ConfigMaps, "not the first document alone")

	_, err = readText(t, spendConfigMap+"...\n# the end\n")
	assert.NoError(t, err, "an end marker alone ends the one document")
}

func TestReadTranscodesUTF16WithAByteOrderMark(t *testing.T) {
	stream := validBudget + "---\n" + spendConfigMap
	for name, encode := range map[string]func(rune) []byte{
		"little-endian": func(r rune) []byte { return []byte{byte(r), byte(r >> 8)} },
		"big-endian":    func(r rune) []byte { return []byte{byte(r >> 8), byte(r)} },
	} {
		t.Run(name, func(t *testing.T) {
			b := encode(0xfeff)
			for _, r := range stream {
				b = append(b, encode(r)...)
			}
			set, err := readText(t, string(b))
			require.NoError(t, err)
			assert.Len(t, set.Budgets, 1)
			require.Len(t, set.ConfigMaps, 1, "every document is read, not the first alone")
			assert.Equal(t, 12, set.ConfigMaps[0].Line)
		})
	}
	_, err := readText(t, "\xff\xfe\x00\x00a\x00\x00\x00")
	assert.EqualError(t, err, "stdin: UTF-32 is not read: save it as UTF-8")
}

func TestReadWalksDirectoriesAndSaysWhatItSkipped(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600))
	}
	write("a/b/budget.yaml", validBudget)
	write("a/spend.json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"team-ml"}}`)
	write("a/notes.txt", "not yaml: [")
	write("a/empty.yml", "\n# nothing\n")
	write(".hidden/budget.yaml", "not: read")
	set, err := manifest.Read([]string{dir}, nil)
	require.NoError(t, err)
	assert.Len(t, set.Budgets, 1)
	assert.Len(t, set.ConfigMaps, 1)
	assert.Equal(t, []manifest.SkippedFile{
		{Path: filepath.Join(dir, ".hidden"), Why: "a hidden directory"},
		{Path: filepath.Join(dir, "a/notes.txt"), Why: "not a .yaml, .yml or .json file"},
		{Path: filepath.Join(dir, "a/empty.yml"), Why: "empty: no YAML document"},
	}, set.SkippedFiles)

	_, err = manifest.Read([]string{filepath.Join(dir, "a/empty.yml")}, nil)
	assert.EqualError(t, err, filepath.Join(dir, "a/empty.yml")+": is empty: no YAML document", "named, it is refused")
}
