package metacontroller

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAnObjectMapKeepsSlicesOfTheBody(t *testing.T) {
	body := []byte(`{"related":{"Namespace.v1":{"a":{"metadata":{"name":"a"}},"b":null}}}`)
	var req CompositeRequest
	require.NoError(t, json.Unmarshal(body, &req))
	a := req.Related[NamespaceGroup]["a"]
	assert.JSONEq(t, `{"metadata":{"name":"a"}}`, string(a))
	body[bytes.Index(body, []byte(`"name":"a"`))+8] = 'z'
	assert.Contains(t, string(a), `"name":"z"`, "the object is the body's bytes, not a copy")

	out, err := json.Marshal(ObjectMap{"X.v1": {"n": nil, "o": Raw(`{"k":1}`)}})
	require.NoError(t, err)
	assert.Equal(t, `{"X.v1":{"n":null,"o":{"k":1}}}`, string(out))
}
