package decode_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/llmbudget/llmbudget/internal/decode"
)

type spec struct {
	LimitUSD string `json:"limitUSD"`
	Period   struct {
		StartDay int32 `json:"startDay"`
	} `json:"period"`
	Names []string `json:"names"`
}

func TestFieldNamesMatchExactly(t *testing.T) {
	for _, in := range []string{`{"limitusd":"1"}`, `{"LIMITUSD":"1"}`, `{"LimitUSD":"1"}`} {
		var s spec
		require.NoError(t, decode.Lenient([]byte(in), &s, "spec"), in)
		assert.Empty(t, s.LimitUSD, "%s is not limitUSD", in)
	}
}

func TestErrorsNameTheJSONPathAndTypeAsTheAPIServerDoes(t *testing.T) {
	cases := map[string]struct {
		in, want string
		strict   bool
	}{
		"a string for an integer": {
			in: `{"period":{"startDay":"1"}}`, want: `spec.period.startDay: Invalid value: "string": must be of type integer`,
		},
		"a fraction for an integer": {
			in: `{"period":{"startDay":1.5}}`, want: `spec.period.startDay: Invalid value: "number": must be of type integer`,
		},
		"a number for a string": {
			in: `{"limitUSD":5}`, want: `spec.limitUSD: Invalid value: "number": must be of type string`,
		},
		"a boolean for a string": {
			in: `{"limitUSD":true}`, want: `spec.limitUSD: Invalid value: "boolean": must be of type string`,
		},
		"an object for a list": {in: `{"names":{}}`, want: `spec.names: Invalid value: "object": must be of type array`},
		"not an object at all": {in: `[]`, want: `spec: Invalid value: "array": must be of type object`},
		"malformed JSON": {
			in:   `{"limitUSD":}`,
			want: "spec: malformed JSON at byte 13: invalid character '}' looking for beginning of value",
		},
		"an unknown field, strict": {in: `{"limitusd":"1"}`, want: `unknown field "spec.limitusd"`, strict: true},
		"a repeated field, strict": {
			in: `{"limitUSD":"1","limitUSD":"2"}`, want: `duplicate field "spec.limitUSD"`, strict: true,
		},
		"two problems, strict": {
			in: `{"a":1,"period":{"b":2}}`, want: `unknown field "spec.a", unknown field "spec.period.b"`, strict: true,
		},
		"a type error beats strict": {
			in: `{"a":1,"limitUSD":5}`, want: `spec.limitUSD: Invalid value: "number": must be of type string`, strict: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var s spec
			fn := decode.Lenient
			if tc.strict {
				fn = decode.Strict
			}
			err := fn([]byte(tc.in), &s, "spec")
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
			assert.NotContains(t, err.Error(), "Go ")
		})
	}
}

func TestATypeMismatchIsAFieldErrorOnItsPath(t *testing.T) {
	var s spec
	err := decode.Strict([]byte(`{"period":{"startDay":"1"}}`), &s, "spec")
	fe, ok := errors.AsType[*field.Error](err)
	require.True(t, ok, "%v is a *field.Error", err)
	assert.Equal(t, field.ErrorTypeTypeInvalid, fe.Type)
	assert.Equal(t, "spec.period.startDay", fe.Field)
	assert.Equal(t, "string", fe.BadValue)
}

func TestATypeMismatchWithoutARootStillReadsWell(t *testing.T) {
	var names []string
	err := decode.Lenient([]byte(`{}`), &names, "")
	require.Error(t, err)
	assert.Equal(t, `Invalid value: "object": must be of type array`, err.Error())
}

func TestLenientIgnoresWhatStrictRefuses(t *testing.T) {
	var s spec
	require.NoError(t, decode.Lenient([]byte(`{"limitUSD":"1","extra":{"x":1}}`), &s, "spec"))
	assert.Equal(t, "1", s.LimitUSD)
}

func FuzzStrict(f *testing.F) {
	f.Add([]byte(`{"limitUSD":"1","period":{"startDay":3},"names":["a"]}`))
	f.Add([]byte(`{"limitUSD":"1","limitUSD":"2","x":[]}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		var s spec
		if err := decode.Strict(in, &s, "spec"); err != nil {
			assert.NotContains(t, err.Error(), "Go value")
			assert.NotContains(t, err.Error(), "Go struct")
		}
	})
}
