package controller

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

// decoded is what closes and stringsOrNull must agree with: the namespaces decoded as the API types decode them.
func decoded(raw []byte, namespace string) (isList, holds bool) {
	var names []string
	if len(raw) == 0 {
		return true, false
	}
	if json.Unmarshal(raw, &names) != nil {
		return false, false
	}
	return true, slices.Contains(names, namespace)
}

func TestClosesFindsTheNamespaceAsDecodingTheListWould(t *testing.T) {
	cases := map[string]struct {
		raw, namespace string
		list, holds    bool
	}{
		"among others":                      {`["a","team-ml","b"]`, "team-ml", true, true},
		"only a prefix of one":              {`["team-ml-2"]`, "team-ml", true, false},
		"inside one, past a quote":          {`["x\"team-ml\"y"]`, "team-ml", true, false},
		"written with an escape":            {`["team\u002dml"]`, "team-ml", true, true},
		"spaced and broken over lines":      {"[ \"a\" ,\n\t\"team-ml\" ]", "team-ml", true, true},
		"empty":                             {`[]`, "team-ml", true, false},
		"null":                              {`null`, "team-ml", true, false},
		"a string, not a list":              {`"team-ml"`, "team-ml", false, false},
		"a list of other than strings":      {`[1,"team-ml"]`, "team-ml", false, false},
		"an object":                         {`{"team-ml":1}`, "team-ml", false, false},
		"a name that is no DNS label (',')": {`["a","b"]`, ",", true, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			list := stringsOrNull([]byte(tc.raw))
			assert.Equal(t, tc.list, list, "a list of names")
			if list {
				assert.Equal(t, tc.holds, closes([]byte(tc.raw), tc.namespace))
			}
		})
	}
}

// FuzzCloses checks that, for every JSON value, the lookup in place agrees with decoding the list.
func FuzzCloses(f *testing.F) {
	f.Add([]byte(`["a","team-ml"]`), "team-ml")
	f.Add([]byte(`["team\u002dml"]`), "team-ml")
	f.Add([]byte(`["a","b"]`), ",")
	f.Fuzz(func(t *testing.T, raw []byte, namespace string) {
		if !json.Valid(raw) {
			return // the request is decoded whole first: only valid JSON gets here
		}
		isList, holds := decoded(raw, namespace)
		if got := stringsOrNull(raw); got != isList {
			t.Fatalf("stringsOrNull(%s) = %v, decoding says %v", raw, got, isList)
		}
		if isList {
			if got := closes(raw, namespace); got != holds {
				t.Fatalf("closes(%s, %q) = %v, decoding says %v", raw, namespace, got, holds)
			}
		}
	})
}
