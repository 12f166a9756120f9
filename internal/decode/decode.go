// Package decode reads JSON with sigs.k8s.io/json, the decoder the API server and Metacontroller use, and words
// its errors as the API server does.
//
// Guarantees:
//   - Field names match case-sensitively, as in the API server: "limitusd" and "LIMITUSD" are not limitUSD.
//   - Lenient ignores members the Go type does not model; Strict reports them and repeated members by JSON path,
//     in the API server's words: unknown field "spec.x", duplicate field "spec.x".
//   - A value of the wrong JSON type is a *field.Error of type FieldValueTypeInvalid on its JSON path, worded as
//     the API server's schema validation words it ("spec.period.startDay: Invalid value: "string": must be of type
//     integer"), never naming a Go type.
package decode

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
)

// Lenient decodes data into v, ignoring members v does not model. root names data in errors ("parent", "spec").
func Lenient(data []byte, v any, root string) error {
	return describe(root, data, v, kjson.UnmarshalCaseSensitivePreserveInts(data, v))
}

// Strict is Lenient that also refuses unknown and repeated members.
func Strict(data []byte, v any, root string) error {
	strict, err := kjson.UnmarshalStrict(data, v)
	if err != nil {
		return describe(root, data, v, err)
	}
	return strictErrors(root, strict)
}

// Unique is Lenient that also refuses a member repeated within one object, as the API server does: for a related
// object, whose unknown members are Kubernetes' and none of ours, a repeated member would otherwise be read
// last-wins, and a crafted request could hide one value behind another.
func Unique(data []byte, v any, root string) error {
	strict, err := kjson.UnmarshalStrict(data, v, kjson.DisallowDuplicateFields)
	if err != nil {
		return describe(root, data, v, err)
	}
	return strictErrors(root, strict)
}

// strictErrors words the unknown and repeated members a strict decoding found, by their path under root.
func strictErrors(root string, strict []error) error {
	if len(strict) == 0 {
		return nil
	}
	msgs := make([]string, len(strict))
	for i, e := range strict {
		if fe, ok := e.(kjson.FieldError); ok {
			fe.SetFieldPath(join(root, fe.FieldPath()))
		}
		msgs[i] = e.Error()
	}
	// The API server lists strict decoding errors the same way, separated by commas.
	return errors.New(strings.Join(msgs, ", "))
}

// describe words err, from decoding data into v, under root.
func describe(root string, data []byte, v any, err error) error {
	if err == nil {
		return nil
	}
	if ok, offset := kjson.SyntaxErrorOffset(err); ok {
		err = fmt.Errorf("malformed JSON at byte %d: %v", offset, err)
	} else if path, want, got, ok := TypeMismatch(data, v); ok {
		return TypeError(join(root, path), want, got)
	}
	if root == "" {
		return err
	}
	return fmt.Errorf("%s: %w", root, err)
}

// TypeError is a value of JSON type got ("string", "number 1.5") where the schema wants type want, at the JSON path
// ("spec.period.startDay") or, when path is empty, at the top of a document. got is named as a schema names types.
func TypeError(path, want, got string) error {
	got, _, _ = strings.Cut(got, " ") // "number 1.5" is a number, as the API server says
	if got == "bool" {
		got = "boolean"
	}
	if path == "" {
		// A field.Error starts with its path; without one it would read ": Invalid value".
		return errors.New(field.TypeInvalid(nil, got, "must be of type "+want).ErrorBody())
	}
	names := strings.Split(path, ".")
	return field.TypeInvalid(field.NewPath(names[0], names[1:]...), got, "must be of type "+want)
}

// TypeMismatch reads the first value of the wrong JSON type in data, for a v that data failed to decode into: the
// field's JSON path ("spec.period.startDay"), the type wanted as an OpenAPI schema names it ("integer", "array") and
// the JSON value found ("string", "number 1.5"). sigs.k8s.io/json reports a mismatch as its own copy of
// encoding/json's UnmarshalTypeError, a type that cannot be imported; so data is decoded again, by encoding/json,
// into a new value of v's type, and the mismatch read from encoding/json's exported error. ok is false when that
// decoding finds none: the caller keeps the decoder's own words.
func TypeMismatch(data []byte, v any) (field, want, got string, ok bool) {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer {
		return "", "", "", false
	}
	e, ok := errors.AsType[*json.UnmarshalTypeError](json.Unmarshal(data, reflect.New(t.Elem()).Interface()))
	if !ok || e.Type == nil {
		return "", "", "", false
	}
	return e.Field, cmp.Or(schemaTypes[e.Type.Kind()], "object"), e.Value, true
}

// schemaTypes names a Go kind as an OpenAPI schema does; the rest (maps, structs, interfaces) are objects.
var schemaTypes = map[reflect.Kind]string{
	reflect.Int: "integer", reflect.Int8: "integer", reflect.Int16: "integer", reflect.Int32: "integer",
	reflect.Int64: "integer", reflect.Uint: "integer", reflect.Uint8: "integer", reflect.Uint16: "integer",
	reflect.Uint32: "integer", reflect.Uint64: "integer",
	reflect.Float32: "number", reflect.Float64: "number", reflect.String: "string", reflect.Bool: "boolean",
	reflect.Slice: "array", reflect.Array: "array",
}

func join(root, field string) string {
	if root == "" || field == "" {
		return root + field
	}
	return root + "." + field
}
