package httpapi

// An internal test: it compares the fast decoders with decodeRequest, the
// encoding/json path they must agree with, which the package does not export.

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/internal/hookwire"
)

// agreeOnRequest checks that each fast decoder leaves what encoding/json
// leaves and fails with the same reason.
func agreeOnRequest(t *testing.T, body []byte) {
	t.Helper()
	check := func(name string, fast, std any, fastErr, stdErr error) {
		t.Helper()
		if stdErr != nil {
			require.Error(t, fastErr, name)
			require.Equal(t, stdErr.Error(), fastErr.Error(), name)
			return
		}
		require.NoError(t, fastErr, name)
		require.True(t, reflect.DeepEqual(std, fast), "%s of %q:\nwant %+v\ngot  %+v", name, body, std, fast)
	}
	var c1, c2 hookwire.CompositeRequest
	fastErr, stdErr := decodeComposite(body, &c1), decodeRequest(body, &c2)
	check("composite", c1, c2, fastErr, stdErr)
	var d1, d2 hookwire.DecoratorRequest
	fastErr, stdErr = decodeDecorator(body, &d1), decodeRequest(body, &d2)
	check("decorator", d1, d2, fastErr, stdErr)
	var u1, u2 hookwire.CustomizeRequest
	fastErr, stdErr = decodeCustomize(body, &u1), decodeRequest(body, &u2)
	check("customize", u1, u2, fastErr, stdErr)
}

func TestFastDecodersAgreeWithEncodingJSON(t *testing.T) {
	cases := map[string]string{
		"a minimal sync":                   minimalSyncBody,
		"a decorator request":              `{"object":{"metadata":{"name":"w"}},"attachments":{"Event.v1":{}},"related":{"LLMCostBudget.llmbudget.dev/v1alpha1":{"ns/b":{"status":{}}}},"finalizing":true}`,
		"null maps and groups":             `{"parent":{},"children":null,"related":{"ConfigMap.v1":null},"finalizing":null}`,
		"a repeated field":                 `{"parent":{"a":1},"parent":{"b":2}}`,
		"a repeated group merges":          `{"related":{"ConfigMap.v1":{"ns/a":{}},"ConfigMap.v1":{"ns/b":{}}}}`,
		"a repeated object: the last wins": `{"related":{"ConfigMap.v1":{"ns/a":{"x":1},"ns/a":{"x":2}}}}`,
		"a field name in capitals":         `{"PARENT":{"metadata":{"name":"b"}},"Finalizing":true}`,
		"an escaped field name":            `{"p\u0061rent":{"metadata":{"name":"b"}}}`,
		"an escaped object key":            `{"related":{"ConfigMap.v1":{"ns\/cm":{}}}}`,
		"a non-ASCII object key":           `{"related":{"ConfigMap.v1":{"ns/cmé":{}}}}`,
		"unknown fields are ignored":       `{"parent":{},"extra":{"deep":[1,2,3]},"another":null}`,
		"finalizing of the wrong type":     `{"parent":{},"finalizing":"yes"}`,
		"children of the wrong type":       `{"parent":{},"children":[]}`,
		"a group of the wrong type":        `{"parent":{},"children":{"Event.v1":[]}}`,
		"malformed JSON":                   `{"parent": {`,
		"trailing data":                    `{"parent":{}} {}`,
		"not an object":                    `[1]`,
		"empty":                            ``,
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) { agreeOnRequest(t, []byte(body)) })
	}
}

func TestFastDecodersAgreeOnEveryFixture(t *testing.T) {
	files, err := filepath.Glob("../../test/fixtures/*/*/*.request.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		body, err := os.ReadFile(f)
		require.NoError(t, err)
		agreeOnRequest(t, body)
	}
}

func FuzzFastDecoders(f *testing.F) {
	f.Add([]byte(minimalSyncBody))
	f.Add([]byte(`{"object":{"metadata":{"name":"w"}},"attachments":{"Event.v1":{"ns/e":{"a":1}}},"related":{},"finalizing":false,"controller":{"x":[1]}}`))
	f.Add([]byte(`{"Parent":null,"related":{"A":null,"B":{"k":true}},"finalizing":true}`))
	f.Fuzz(func(t *testing.T, body []byte) { agreeOnRequest(t, body) })
}

const minimalSyncBody = `{"parent":{"apiVersion":"llmbudget.dev/v1alpha1","kind":"LLMCostBudget","metadata":{"name":"b","namespace":"ns","generation":1},"spec":{"limitUSD":"10","costSource":{"configMapName":"cm","key":"k"}}},"children":{},"related":{"ConfigMap.v1":{"ns/cm":{"data":{"k":"2.50"}}}},"finalizing":false}`
