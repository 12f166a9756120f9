package rawjson_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/rawjson"
)

func TestValidAgreesWithEncodingJSON(t *testing.T) {
	cases := []string{
		`{}`, ` {"a": [1, -2.5e+3, true, false, null, "x\u00e9\n"]} `, `[]`, `"s"`, `0`, `-0.0E-0`,
		``, ` `, `{`, `}`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `01`, `1.`, `.5`, `-`, `1e`, `+1`,
		`tru`, `nul`, `truex`, `"\x"`, `"\u12G4"`, "\"\x01\"", `"unterminated`, `{"a":1} x`, `{"a" 1}`,
		`{1:2}`, `[1 2]`, "\"\xff\xfe\"", `{"a":{"b":[{}]}}`, `NaN`, `Infinity`,
	}
	for _, c := range cases {
		assert.Equal(t, json.Valid([]byte(c)), rawjson.Valid([]byte(c)), "%q", c)
	}
}

func TestValidRefusesNestingBeyondMaxDepth(t *testing.T) {
	ok := strings.Repeat("[", rawjson.MaxDepth) + strings.Repeat("]", rawjson.MaxDepth)
	deep := strings.Repeat("[", rawjson.MaxDepth+1) + strings.Repeat("]", rawjson.MaxDepth+1)
	assert.True(t, rawjson.Valid([]byte(ok)))
	assert.False(t, rawjson.Valid([]byte(deep)), "encoding/json decodes it, not the fast path")
	assert.True(t, json.Valid([]byte(deep)))
}

func TestMembersHandsOverRawKeysAndValues(t *testing.T) {
	var keys, values []string
	ok := rawjson.Members([]byte(` {"a" : 1, "b\"c": {"d": [1, 2]}, "e":"f"} `), func(k, v []byte) bool {
		keys, values = append(keys, string(k)), append(values, string(v))
		return true
	})
	require.True(t, ok)
	assert.Equal(t, []string{"a", `b\"c`, "e"}, keys)
	assert.Equal(t, []string{"1", `{"d": [1, 2]}`, `"f"`}, values)
}

func TestMembersRefusesWhatIsNotOneValidObject(t *testing.T) {
	for _, c := range []string{`[]`, `null`, `{"a":1} {}`, `{"a":1`, `{"a":01}`, `{"a":1}x`} {
		assert.False(t, rawjson.Members([]byte(c), func(_, _ []byte) bool { return true }), c)
	}
}

func TestMembersStopsWhenToldTo(t *testing.T) {
	n := 0
	ok := rawjson.Members([]byte(`{"a":1,"b":2,"c":3}`), func(k, _ []byte) bool { n++; return string(k) != "b" })
	assert.False(t, ok)
	assert.Equal(t, 2, n)
}

// The shapes the hooks decode into.
type (
	parent struct {
		Metadata api.ObjectMeta  `json:"metadata"`
		Spec     json.RawMessage `json:"spec"`
		Status   json.RawMessage `json:"status"`
	}
	object struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			api.ObjectMeta
			Annotations map[string]string `json:"annotations,omitempty"`
		} `json:"metadata"`
	}
	configMap struct {
		Data map[string]string `json:"data"`
	}
	nested struct {
		A struct {
			B struct {
				C int `json:"c"`
			} `json:"b"`
			Items []struct {
				X string `json:"x"`
			} `json:"items"`
		} `json:"a"`
		Any  any            `json:"any"`
		Ptr  *nested        `json:"ptr"`
		M    map[string]any `json:"m"`
		Name string         // no tag: the Go name
		Bad  string         `json:"bad,string"`
	}
)

func targets() []func() any {
	return []func() any{
		func() any { return new(parent) },
		func() any { return new(object) },
		func() any { return new(configMap) },
		func() any { return new(api.Status) },
		func() any { return new(api.Spec) },
		func() any { return new(nested) },
	}
}

// agree checks that rawjson.Unmarshal, and UnmarshalValid on valid JSON,
// leave what json.Unmarshal leaves and fail the same way.
func agree(t *testing.T, data []byte) {
	t.Helper()
	agreeWith(t, rawjson.Unmarshal, data)
	if json.Valid(data) {
		agreeWith(t, rawjson.UnmarshalValid, data)
	}
}

func agreeWith(t *testing.T, unmarshal func([]byte, any) error, data []byte) {
	t.Helper()
	for _, newTarget := range targets() {
		want, got := newTarget(), newTarget()
		wantErr := json.Unmarshal(data, want)
		gotErr := unmarshal(data, got)
		if wantErr != nil {
			require.Error(t, gotErr, "%T", got)
			require.Equal(t, wantErr.Error(), gotErr.Error(), "%T", got)
		} else {
			require.NoError(t, gotErr, "%T", got)
		}
		require.True(t, reflect.DeepEqual(want, got), "%T:\nwant %+v\ngot  %+v", got, want, got)
	}
}

func TestUnmarshalAgreesWithEncodingJSON(t *testing.T) {
	cases := map[string]string{
		"managed fields and annotations are dropped": `{"metadata":{"name":"b","namespace":"ns","managedFields":[{"f:x":{}}],"annotations":{"a":"b"},"labels":{"l":"v"},"generation":3,"creationTimestamp":"2026-11-29T07:29:34Z"},"spec":{"limitUSD":"5"},"status":{"state":"Warning"}}`,
		"keys match ignoring case":                   `{"METADATA":{"Name":"b","nAmEsPaCe":"ns"},"Spec":{"x":1},"data":{"k":"v"},"DATA":{"k2":"v2"}}`,
		"escaped keys are left to encoding/json":     `{"meta\u0064ata":{"name":"b"},"d\u0061ta":{"k":"v"}}`,
		"non-ASCII keys are left to encoding/json":   `{"metadata":{"\u017fpec":1,"name":"b"},"ſpec":{"a":1},"ſtate":"x"}`,
		"a type error names the full path":           `{"metadata":{"name":"b","generation":"three"},"spec":{}}`,
		"a type error in a dropped member is none":   `{"metadata":{"name":"b","resourceVersion":{"not":"a string"}},"kind":[1]}`,
		"a late type error after good fields":        `{"apiVersion":"v1","metadata":{"name":"b","labels":{"a":1}}}`,
		"duplicate keys merge like encoding/json":    `{"metadata":{"name":"a"},"metadata":{"namespace":"n"},"data":{"a":"1"},"data":{"b":"2"}}`,
		"null members":                         `{"metadata":null,"spec":null,"status":null,"data":null}`,
		"not an object":                        `[{"metadata":{"name":"b"}}]`,
		"null":                                 `null`,
		"invalid JSON":                         `{"metadata":{"name":"b"}`,
		"trailing data":                        `{"metadata":{"name":"b"}} {}`,
		"deep nesting inside a dropped member": `{"x":` + strings.Repeat("[", 2000) + strings.Repeat("]", 2000) + `,"metadata":{"name":"b"}}`,
		"nested structs and the Go name":       `{"a":{"b":{"c":1,"d":2},"items":[{"x":"1","y":2}],"z":3},"any":{"q":1},"ptr":{"a":{"b":{"c":7}},"Name":"p"},"m":{"k":[1]},"name":"n","bad":"\"s\""}`,
		"the status of a budget":               `{"state":"OverBudget","thresholds":[{"percent":80,"basis":"Actual","crossedAt":"2026-11-29T07:30:00Z"}],"conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2026-11-29T07:30:00Z","reason":"Evaluated","message":"m"}],"foreign":{"x":1}}`,
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) { agree(t, []byte(c)) })
	}
}

func TestUnmarshalAgreesOnEveryFixture(t *testing.T) {
	for _, f := range fixtureBodies(t) {
		var req struct {
			Parent, Object json.RawMessage
			Related        map[string]map[string]json.RawMessage
		}
		require.NoError(t, json.Unmarshal(f, &req))
		agree(t, f)
		agree(t, req.Parent)
		agree(t, req.Object)
		for _, group := range req.Related {
			for _, o := range group {
				agree(t, o)
			}
		}
	}
}

func fixtureBodies(t testing.TB) [][]byte {
	files, err := filepath.Glob("../../test/fixtures/*/*/*.request.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	var out [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		out = append(out, b)
	}
	return out
}

func FuzzValid(f *testing.F) {
	for _, b := range fixtureBodies(f) {
		f.Add(b)
	}
	f.Add([]byte(`{"a":[1,2,{"b":"c\u0041"}],"d":-1.5e3}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, want := rawjson.Valid(data), json.Valid(data)
		if got != want && !(want && depth(data) > rawjson.MaxDepth) {
			t.Fatalf("Valid(%q) = %v, json.Valid = %v", data, got, want)
		}
	})
}

func FuzzMembers(f *testing.F) {
	for _, b := range fixtureBodies(f) {
		f.Add(b)
	}
	f.Add([]byte(`{"a":1,"b\"":{"c":[]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var rebuilt bytes.Buffer
		rebuilt.WriteByte('{')
		ok := rawjson.Members(data, func(k, v []byte) bool {
			if rebuilt.Len() > 1 {
				rebuilt.WriteByte(',')
			}
			rebuilt.WriteByte('"')
			rebuilt.Write(k)
			rebuilt.WriteString(`":`)
			rebuilt.Write(v)
			return true
		})
		rebuilt.WriteByte('}')
		if !ok {
			return
		}
		var want, got bytes.Buffer
		if err := json.Compact(&want, data); err != nil {
			t.Fatalf("Members accepted %q, which encoding/json refuses: %v", data, err)
		}
		if err := json.Compact(&got, rebuilt.Bytes()); err != nil {
			t.Fatalf("members of %q do not make an object: %v", data, err)
		}
		if want.String() != got.String() {
			t.Fatalf("members of %q rebuild %q", want.String(), got.String())
		}
	})
}

func FuzzUnmarshal(f *testing.F) {
	f.Add([]byte(`{"Metadata":{"name":"b","managedFields":[]},"spec":{"x":1}}`))
	f.Add([]byte(`{"apiVersion":"v1","metadata":{"name":"w","labels":{"a":"b"},"annotations":{"x":"y"},"generation":2},"data":{"k":"{\"costUSD\": \"1\"}"},"status":{"state":"Warning"}}`))
	f.Add([]byte(`{"a":{"b":{"c":1}},"ptr":{"ptr":{"name":"x"}}}`))
	f.Fuzz(func(t *testing.T, data []byte) { agree(t, data) })
}

// depth is the deepest bracket nesting in data, strings aside.
func depth(data []byte) int {
	d, deepest, inString := 0, 0, false
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			d++
			deepest = max(deepest, d)
		case c == '}' || c == ']':
			d--
		}
	}
	return deepest
}

func TestStringDecodesLikeEncodingJSON(t *testing.T) {
	for _, v := range []string{
		`""`, `"plain"`, `"{\"costUSD\": \"1.5\"}"`, `"tab\there\nnew \/ \\ \b\f\r"`, `"caf\u00e9"`, `"café"`,
		"\"\xff\xfe invalid UTF-8\"", `"\ud83d\ude00 pair"`, `"\ud83d lone"`, `"é and \" together"`, `1`, `null`, `{}`,
	} {
		var want string
		wantErr := json.Unmarshal([]byte(v), &want)
		got, ok := rawjson.String([]byte(v))
		assert.Equal(t, v[0] == '"', ok, "%s: strings, and only strings, are decoded", v)
		if ok {
			require.NoError(t, wantErr, v)
			assert.Equal(t, want, got, v)
		}
	}
}

func TestStringMapDecodesLikeEncodingJSON(t *testing.T) {
	for _, v := range []string{
		`{"a":"1","b":"{\"costUSD\": \"2\"}"}`, `{}`, `null`, `{"a":"1","a":"2"}`,
		`{"a":1}`, `{"a\u0062":"1"}`, `{"é":"1"}`, `["a"]`,
	} {
		var want map[string]string
		wantErr := json.Unmarshal([]byte(v), &want)
		got, ok := rawjson.StringMap([]byte(v))
		if !ok {
			continue // left to encoding/json, which is right by definition
		}
		require.NoError(t, wantErr, v)
		assert.Equal(t, want, got, v)
	}
	_, ok := rawjson.StringMap([]byte(`{"a":"1","b":"{\"c\": 2}"}`))
	assert.True(t, ok, "a ConfigMap's data takes the fast path")
}

func TestIgnorableFollowsEncodingJSONFieldMatching(t *testing.T) {
	assert.True(t, rawjson.Ignorable([]byte("controller"), "parent"))
	assert.False(t, rawjson.Ignorable([]byte("parent"), "parent"))
	assert.False(t, rawjson.Ignorable([]byte("PaReNt"), "parent"), "encoding/json matches ignoring case")
	assert.False(t, rawjson.Ignorable([]byte(`p\u0061rent`), "parent"), "escaped keys are left to encoding/json")
	assert.False(t, rawjson.Ignorable([]byte("ſtatus"), "status"), "non-ASCII keys are left to encoding/json")
}

func FuzzString(f *testing.F) {
	f.Add([]byte(`"{\"costUSD\": \"1.5\"}"`))
	f.Add([]byte(`"caf\u00e9 \ud83d"`))
	f.Fuzz(func(t *testing.T, v []byte) {
		if !json.Valid(v) {
			return // String reads values Members handed over, which are valid
		}
		var want string
		wantErr := json.Unmarshal(v, &want)
		got, ok := rawjson.String(v)
		isString := bytes.HasPrefix(bytes.TrimLeft(v, " \t\r\n"), []byte(`"`))
		if !isString {
			if ok {
				t.Fatalf("String(%q) decoded a value that is not a string", v)
			}
			return
		}
		v = bytes.TrimSpace(v)
		got, ok = rawjson.String(v)
		if !ok || wantErr != nil || got != want {
			t.Fatalf("String(%q) = %q, %v; encoding/json %q, %v", v, got, ok, want, wantErr)
		}
	})
}

func FuzzStringMap(f *testing.F) {
	f.Add([]byte(`{"a":"1","b":"{\"costUSD\": \"2\"}"}`))
	f.Add([]byte(`{"a":"\u00e9","a":"x"}`))
	f.Fuzz(func(t *testing.T, v []byte) {
		got, ok := rawjson.StringMap(v) // never panics, whatever v is
		if !ok || !json.Valid(v) {
			return // StringMap reads values Members handed over, which are valid
		}
		var want map[string]string
		if err := json.Unmarshal(v, &want); err != nil {
			t.Fatalf("StringMap accepted %q, which encoding/json refuses: %v", v, err)
		}
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("StringMap(%q) = %v, encoding/json %v", v, got, want)
		}
	})
}

type member struct{ key, value string }

func collect(walk func([]byte, func(k, v []byte) bool) bool, data []byte) ([]member, bool) {
	var ms []member
	ok := walk(data, func(k, v []byte) bool {
		_ = v[0] // values are never empty: callers look at their first byte
		ms = append(ms, member{string(k), string(v)})
		return true
	})
	return ms, ok
}

func TestWalkSeesWhatMembersSeesInValidObjects(t *testing.T) {
	for _, c := range []string{
		`{}`, ` { "a" : [1, {"b": "}]\"\\"}, "c\\\\"] , "d\"e": -1.5e3, "f":true,"g":null, "h":"x"} `,
		`{"managedFields":[{"f:data":{".":{},"f:k":{}}}],"s":"\\\\\\\""}`,
	} {
		want, wantOK := collect(rawjson.Members, []byte(c))
		got, gotOK := collect(rawjson.Walk, []byte(c))
		require.True(t, wantOK, c)
		assert.True(t, gotOK, c)
		assert.Equal(t, want, got, c)
	}
	for _, c := range []string{`[]`, `"s"`, `1`, `null`, ``} {
		_, ok := collect(rawjson.Walk, []byte(c))
		assert.False(t, ok, "%q is not an object", c)
	}
}

func FuzzWalk(f *testing.F) {
	f.Add([]byte(`{"a":[1,{"b":"}]\"\\"}],"c":{"d":null}}`))
	f.Add([]byte(`{"a":"\\\"","b":[[],{}],"c":-0.5}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, gotOK := collect(rawjson.Walk, data) // never panics, whatever data is
		if !rawjson.Valid(data) {
			return
		}
		want, wantOK := collect(rawjson.Members, data)
		if wantOK != gotOK || !reflect.DeepEqual(want, got) {
			t.Fatalf("%q: Members %v %q, Walk %v %q", data, wantOK, want, gotOK, got)
		}
	})
}

func TestObjectDescendsIntoValuesInTheSamePass(t *testing.T) {
	data := []byte(` {"a": {"x": 1, "y": [2]}, "b": true, "c": null} `)
	var inner []string
	end := rawjson.Object(data, 0, func(key []byte, i int) int {
		switch string(key) {
		case "a":
			return rawjson.Object(data, i, func(k []byte, j int) int {
				inner = append(inner, string(k))
				return rawjson.Skip(data, j)
			})
		case "b":
			return rawjson.Literal(data, i, "true")
		}
		return rawjson.Skip(data, i)
	})
	assert.True(t, rawjson.End(data, end))
	assert.Equal(t, []string{"x", "y"}, inner)

	for _, bad := range []string{`{"a": {"x": 01}}`, `{"a": {"x" 1}}`, `{"a": {}} x`, `{"a": {},}`, `{"b": tru}`} {
		d := []byte(bad)
		end := rawjson.Object(d, 0, func(key []byte, i int) int {
			if string(key) == "a" {
				return rawjson.Object(d, i, func(_ []byte, j int) int { return rawjson.Skip(d, j) })
			}
			return rawjson.Skip(d, i)
		})
		assert.False(t, rawjson.End(d, end), bad)
	}
	assert.Equal(t, -1, rawjson.Literal([]byte(`nul`), 0, "null"))
	assert.Equal(t, -1, rawjson.Object([]byte(`[]`), 0, func([]byte, int) int { return 0 }))
}
