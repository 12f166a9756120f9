package httpapi

import (
	"encoding/json"

	"github.com/llmbudget/llmbudget/internal/hookwire"
	"github.com/llmbudget/llmbudget/internal/rawjson"
)

// The fast decoders below fill a hook request straight from the body's raw
// bytes in one validating pass: no reflection, every byte looked at once,
// and the objects (the parent, every child and related object, the
// controller) handed on as slices of the body rather than copies. They give
// up on anything encoding/json might read differently: a key that is
// escaped, not ASCII, repeated or a case variant of a field name, or a value
// of an unexpected type. The caller then decodes with encoding/json, whose
// result and errors are the contract.
//
// The request aliases the body, so it must not outlive the hook call; the
// hooks decode what they keep into fresh values.

// The members each request decodes, in the order its set function numbers them.
var (
	compositeFields = []string{"controller", "parent", "children", "related", "finalizing"}
	decoratorFields = []string{"controller", "object", "attachments", "related", "finalizing"}
	customizeFields = []string{"controller", "parent"}
)

// decodeFields walks the body's top-level object, handing each member named
// in fields to set with its index in fields; it reports false when the fast
// path gave up and encoding/json must decide.
func decodeFields(body []byte, fields []string, set func(field uint, i int) int) bool {
	var seen fieldSet
	end := rawjson.Object(body, 0, func(key []byte, i int) int {
		for n, name := range fields {
			if string(key) == name {
				return seen.once(uint(n), set(uint(n), i))
			}
		}
		return skipIgnorable(body, key, i, fields)
	})
	return rawjson.End(body, end)
}

func decodeComposite(body []byte, req *hookwire.CompositeRequest) error {
	ok := decodeFields(body, compositeFields, func(field uint, i int) int {
		switch field {
		case 0:
			return setRaw(&req.Controller, body, i)
		case 1:
			return setRaw(&req.Parent, body, i)
		case 2:
			return setObjectMap(&req.Children, body, i)
		case 3:
			return setObjectMap(&req.Related, body, i)
		}
		return setBool(&req.Finalizing, body, i)
	})
	if ok {
		return nil
	}
	*req = hookwire.CompositeRequest{}
	return decodeRequest(body, req)
}

func decodeDecorator(body []byte, req *hookwire.DecoratorRequest) error {
	ok := decodeFields(body, decoratorFields, func(field uint, i int) int {
		switch field {
		case 0:
			return setRaw(&req.Controller, body, i)
		case 1:
			return setRaw(&req.Object, body, i)
		case 2:
			return setObjectMap(&req.Attachments, body, i)
		case 3:
			return setObjectMap(&req.Related, body, i)
		}
		return setBool(&req.Finalizing, body, i)
	})
	if ok {
		return nil
	}
	*req = hookwire.DecoratorRequest{}
	return decodeRequest(body, req)
}

func decodeCustomize(body []byte, req *hookwire.CustomizeRequest) error {
	ok := decodeFields(body, customizeFields, func(field uint, i int) int {
		if field == 0 {
			return setRaw(&req.Controller, body, i)
		}
		return setRaw(&req.Parent, body, i)
	})
	if ok {
		return nil
	}
	*req = hookwire.CustomizeRequest{}
	return decodeRequest(body, req)
}

// fieldSet records which fields a request has set, to refuse repeats.
type fieldSet uint8

// once passes on end, what setting field n returned, the first time the
// field is seen; a repeat stops the fast path (encoding/json would let the
// last one win, or merge maps).
func (s *fieldSet) once(n uint, end int) int {
	if *s&(1<<n) != 0 {
		return -1
	}
	*s |= 1 << n
	return end
}

// skipIgnorable skips the value of a member encoding/json ignores, and
// stops at one it might not.
func skipIgnorable(body, key []byte, i int, fields []string) int {
	if !rawjson.Ignorable(key, fields...) {
		return -1
	}
	return rawjson.Skip(body, i)
}

// setRaw is json.RawMessage's decoding: the value's bytes, null included.
func setRaw(dst *json.RawMessage, body []byte, i int) int {
	end := rawjson.Skip(body, i)
	if end >= 0 {
		*dst = body[i:end]
	}
	return end
}

func setBool(dst *bool, body []byte, i int) int {
	if end := rawjson.Literal(body, i, "true"); end >= 0 {
		*dst = true
		return end
	}
	if end := rawjson.Literal(body, i, "false"); end >= 0 {
		*dst = false
		return end
	}
	return rawjson.Literal(body, i, "null") // encoding/json leaves the field as it is
}

// setObjectMap decodes {"Kind.version": {"namespace/name": object}}.
func setObjectMap(dst *hookwire.ObjectMap, body []byte, i int) int {
	if end := rawjson.Literal(body, i, "null"); end >= 0 {
		*dst = nil
		return end
	}
	m := hookwire.ObjectMap{}
	end := rawjson.Object(body, i, func(group []byte, j int) int {
		if !rawjson.PlainKey(group) {
			return -1
		}
		if _, dup := m[string(group)]; dup {
			return -1 // encoding/json would merge the two
		}
		if end := rawjson.Literal(body, j, "null"); end >= 0 {
			m[string(group)] = nil
			return end
		}
		byKey := map[string]json.RawMessage{}
		m[string(group)] = byKey
		return rawjson.Object(body, j, func(key []byte, k int) int {
			if !rawjson.PlainKey(key) {
				return -1
			}
			end := rawjson.Skip(body, k)
			if end >= 0 {
				byKey[string(key)] = body[k:end] // a repeated key: the last wins, as in encoding/json
			}
			return end
		})
	})
	if end >= 0 {
		*dst = m
	}
	return end
}
