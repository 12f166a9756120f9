package rawjson

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
)

// Unmarshal is json.Unmarshal(data, v) for v pointing to a zero value, as
// every hook's decoding target does. Before decoding it drops, at every
// level where v has a struct, the members whose keys match no field of that
// struct: encoding/json would skip them anyway (managedFields, annotations,
// a workload's spec), but only after scanning them twice.
//
// Which keys match follows encoding/json: a key matches a field whose JSON
// name equals it ignoring ASCII case. Keys that are not plain ASCII, and
// values of fields decoded by an UnmarshalJSON or UnmarshalText method, are
// kept as they are. If data is not valid, not an object, or the pruned
// document fails to decode, v is reset to its zero value and json.Unmarshal
// decodes data itself, so errors (and their offsets and field paths) are
// encoding/json's own.
func Unmarshal(data []byte, v any) error { return unmarshal(data, v, Members) }

// UnmarshalValid is Unmarshal for data known to be valid JSON, such as an
// object of a request that Members or encoding/json has already read: it
// does not validate the parts it drops a second time. On input that is not
// valid JSON, what it leaves in v is unspecified.
func UnmarshalValid(data []byte, v any) error { return unmarshal(data, v, Walk) }

func unmarshal(data []byte, v any, members func([]byte, func(key, value []byte) bool) bool) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return json.Unmarshal(data, v)
	}
	p := planFor(rv.Type().Elem())
	if p == nil || p.keepAll {
		return json.Unmarshal(data, v)
	}
	buf := bufPool.Get().(*[]byte)
	defer bufPool.Put(buf)
	pruned, ok := p.prune((*buf)[:0], data, members)
	*buf = pruned[:0]
	if ok && json.Unmarshal(pruned, v) == nil {
		return nil
	}
	rv.Elem().SetZero()
	return json.Unmarshal(data, v)
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// plan says which members of an object a struct type can use.
type plan struct {
	// fields maps a lower-case JSON field name to the plan for its value;
	// a nil plan keeps the value as it is.
	fields map[string]*plan
	// keepAll keeps every member (a struct whose field names are not ASCII).
	keepAll bool
}

// maxKey bounds the keys prune looks up; longer ones are kept.
const maxKey = 128

// prune appends to dst the object obj without the members p cannot use,
// walking it with members: Members validates the document at the top, and
// Walk then goes through the objects inside, already validated. It reports
// false if obj is not one valid JSON object.
func (p *plan) prune(dst, obj []byte, members func([]byte, func(key, value []byte) bool) bool) ([]byte, bool) {
	dst = append(dst, '{')
	n := 0
	ok := members(obj, func(key, value []byte) bool {
		sub, keep := p.member(key)
		if !keep {
			return true
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		dst = append(dst, '"')
		dst = append(dst, key...)
		dst = append(dst, '"', ':')
		if sub != nil && !sub.keepAll && value[0] == '{' {
			var ok bool
			dst, ok = sub.prune(dst, value, Walk)
			return ok
		}
		dst = append(dst, value...)
		return true
	})
	return append(dst, '}'), ok
}

// member reports whether a member with this raw key may matter, and the
// plan for its value.
func (p *plan) member(key []byte) (*plan, bool) {
	if p.keepAll || len(key) > maxKey || !PlainKey(key) {
		return nil, true
	}
	var lower [maxKey]byte
	for i, c := range key {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		lower[i] = c
	}
	sub, ok := p.fields[string(lower[:len(key)])]
	return sub, ok
}

var plans sync.Map // reflect.Type → *plan

// planFor returns the plan for decoding into t; nil when t is not a struct
// or decodes itself.
func planFor(t reflect.Type) *plan {
	if p, ok := plans.Load(t); ok {
		return p.(*plan)
	}
	p := build(t, map[reflect.Type]*plan{})
	plans.Store(t, p)
	return p
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func decodesItself(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	return t.Implements(jsonUnmarshaler) || pt.Implements(jsonUnmarshaler) ||
		t.Implements(textUnmarshaler) || pt.Implements(textUnmarshaler)
}

func build(t reflect.Type, building map[reflect.Type]*plan) *plan {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || decodesItself(t) {
		return nil
	}
	if p, ok := building[t]; ok {
		return p // a recursive type
	}
	p := &plan{fields: map[string]*plan{}}
	building[t] = p
	if !addFields(p, t, building) {
		p.fields, p.keepAll = nil, true
	}
	return p
}

// addFields adds t's fields, and those promoted from its embedded structs,
// to p. Listing more names than encoding/json would match only keeps more;
// it reports false when a name is not plain ASCII.
func addFields(p *plan, t reflect.Type, building map[reflect.Type]*plan) bool {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			if !addFields(p, ft, building) {
				return false
			}
		}
		// encoding/json falls back to the Go name when a tag name is not
		// valid; listing both costs nothing.
		sub := build(f.Type, building)
		for _, n := range []string{name, f.Name} {
			if n == "" {
				continue
			}
			if !PlainKey([]byte(n)) || len(n) > maxKey {
				return false
			}
			key := strings.ToLower(n)
			s := sub
			if old, dup := p.fields[key]; dup && old != s {
				s = nil
			}
			p.fields[key] = s
		}
	}
	return true
}
