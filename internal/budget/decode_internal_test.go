package budget

// An internal test: decodeConfigMap must agree with encoding/json, the
// decoder spendData falls back to, which the package does not export.

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func agreeOnConfigMap(t *testing.T, raw []byte) (fast bool) {
	t.Helper()
	if !json.Valid(raw) {
		return false // spendData only sees related objects of a decoded request
	}
	var got configMap
	if !decodeConfigMap(raw, &got) {
		return false
	}
	var want configMap
	require.NoError(t, json.Unmarshal(raw, &want), "the fast path accepted %q, which encoding/json refuses", raw)
	require.True(t, reflect.DeepEqual(want, got), "%q:\nwant %+v\ngot  %+v", raw, want, got)
	return true
}

func TestConfigMapDataTakesTheFastPathAndAgrees(t *testing.T) {
	for _, raw := range []string{
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"s","managedFields":[{"f:data":{}}]},"data":{"total-usd":"12.5","spend-2026-11-29":"{\"costUSD\": \"1\"}"}}`,
		`{"metadata":{"name":"s"}}`,
		`{"data":null}`,
		`{"data":{}}`,
	} {
		assert.True(t, agreeOnConfigMap(t, []byte(raw)), raw)
	}
}

func TestUnusualConfigMapsAreLeftToEncodingJSON(t *testing.T) {
	for _, raw := range []string{
		`{"Data":{"a":"1"}}`, `{"data":{"a":"1"},"data":{"b":"2"}}`, `{"data":{"a":1}}`,
		`{"data":{"a":null}}`, `{"d\u0061ta":{"a":"1"}}`, `{"data":[]}`, `[]`,
	} {
		assert.False(t, agreeOnConfigMap(t, []byte(raw)), raw)
	}
}

func FuzzDecodeConfigMap(f *testing.F) {
	f.Add([]byte(`{"kind":"ConfigMap","data":{"total-usd":"12.5","k":"{\"costUSD\": \"1\"}"},"binaryData":{"b":"AA=="}}`))
	f.Add([]byte(`{"DATA":{"a":"\u00e9"},"data":null}`))
	f.Fuzz(func(t *testing.T, raw []byte) { agreeOnConfigMap(t, raw) })
}
