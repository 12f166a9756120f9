// Package rawjson reads hook requests without decoding what the hooks never
// look at. A Metacontroller request is mostly managedFields, last-applied
// annotations, the controller object and children the hooks do not read;
// encoding/json scans all of it at least twice (once to validate, once to
// decode or skip), with a function call per byte. This package validates a
// document in one tight pass, walks an object's members as raw bytes, and
// prunes an object down to the members a Go type can use before handing it
// to encoding/json.
//
// It guarantees agreement with encoding/json, so callers can swap it in
// without changing a single byte of output:
//   - Valid accepts a document only if json.Valid does (it refuses nesting
//     deeper than MaxDepth, which encoding/json would still accept).
//   - Members reports success only for a document json.Valid accepts that is
//     one object, and hands over keys and values exactly as they appear.
//     Object, Skip, Literal and End are its parts, for decoders that descend
//     into values in the same pass: a document they read up to End is valid.
//   - Unmarshal leaves in v exactly what json.Unmarshal leaves and returns the
//     same error: on any doubt, and on every error, it runs json.Unmarshal
//     itself on the original input.
//
// Walk, UnmarshalValid, String and StringMap read input already validated
// (an object of a request that Members or encoding/json has read) without
// validating it again; on such input String and StringMap decode exactly as
// encoding/json does, or report false. On other input none of them panics,
// but what they report is unspecified.
package rawjson

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

// MaxDepth bounds the nesting Valid and Members accept, far below
// encoding/json's own limit of 10000, so that hostile input cannot exhaust
// the stack; deeper documents fall back to encoding/json.
const MaxDepth = 1000

// Valid reports whether data is one valid JSON value, possibly surrounded by
// whitespace, nested at most MaxDepth deep.
func Valid(data []byte) bool {
	i := skipSpace(data, 0)
	if i == len(data) {
		return false
	}
	end := skipValue(data, i, 0)
	return end >= 0 && skipSpace(data, end) == len(data)
}

// Members calls fn for each member of the JSON object that is the whole of
// data (whitespace around it allowed), with the key's raw bytes between its
// quotes (escapes left as they are) and the value's raw bytes, validating as
// it goes. It reports whether data is a valid object and fn accepted every
// member; it stops early when fn returns false. fn may have seen some
// members of a document that turns out to be invalid: callers build their
// result as they go and discard it when Members reports false.
func Members(data []byte, fn func(key, value []byte) bool) bool {
	end := Object(data, 0, func(key []byte, i int) int {
		end := skipValue(data, i, 1)
		if end < 0 || !fn(key, data[i:end]) {
			return -1
		}
		return end
	})
	return End(data, end)
}

// Object is Members for decoders that descend into some values in the same
// pass, so that every byte is validated once. It reads the object that
// starts at data[i] (after whitespace) and calls fn with each member's raw
// key and the index of its value; fn returns the index just past the value,
// having validated it with Skip or a nested Object, or -1 to stop. Object
// validates everything else and returns the index just past the object, or
// -1 if the object is not valid or fn stopped.
func Object(data []byte, i int, fn func(key []byte, value int) int) int {
	i = skipSpace(data, i)
	if i >= len(data) || data[i] != '{' {
		return -1
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return i + 1
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return -1
		}
		keyEnd := skipString(data, i+1)
		if keyEnd < 0 {
			return -1
		}
		key := data[i+1 : keyEnd-1]
		i = skipSpace(data, keyEnd)
		if i >= len(data) || data[i] != ':' {
			return -1
		}
		start := skipSpace(data, i+1)
		if start >= len(data) {
			return -1
		}
		if i = fn(key, start); i <= start {
			return -1
		}
		i = skipSpace(data, i)
		if i >= len(data) {
			return -1
		}
		switch data[i] {
		case '}':
			return i + 1
		case ',':
			i = skipSpace(data, i+1)
		default:
			return -1
		}
	}
}

// Skip validates the JSON value that starts at data[i] (after whitespace)
// and returns the index just past it, or -1.
func Skip(data []byte, i int) int {
	return skipValue(data, skipSpace(data, i), 1)
}

// Literal returns the index just past lit ("null", "true", "false") if data
// holds it at i, or -1. What follows is the caller's to check, as for Skip.
func Literal(data []byte, i int, lit string) int {
	if i < 0 || i > len(data) {
		return -1
	}
	return skipLiteral(data, i, lit)
}

// End reports whether end is a valid index after which data holds only
// whitespace: that a document read up to end is complete.
func End(data []byte, end int) bool {
	return end >= 0 && skipSpace(data, end) == len(data)
}

// Walk is Members for a value known to be valid JSON: one Members handed
// over, or a json.RawMessage that encoding/json (or a decoder built on
// Members) filled. It only matches quotes and brackets to skip values, so
// no byte is validated twice. It reports false if value is not an object or
// fn returned false; on input that is not valid JSON it never panics, but
// what it reports is unspecified.
func Walk(value []byte, fn func(key, value []byte) bool) bool {
	i := skipSpace(value, 0)
	if i >= len(value) || value[i] != '{' {
		return false
	}
	i = skipSpace(value, i+1)
	if i < len(value) && value[i] == '}' {
		return true
	}
	for i < len(value) && value[i] == '"' {
		keyEnd := skipStringTrusted(value, i+1)
		if keyEnd < 0 {
			return false
		}
		key := value[i+1 : keyEnd-1]
		i = skipSpace(value, keyEnd)
		if i >= len(value) || value[i] != ':' {
			return false
		}
		start := skipSpace(value, i+1)
		end := skipTrusted(value, start)
		if end <= start || !fn(key, value[start:end]) {
			return false
		}
		i = skipSpace(value, end)
		if i >= len(value) {
			return false
		}
		if value[i] == '}' {
			return true
		}
		i = skipSpace(value, i+1) // the ','
	}
	return false
}

// PlainKey reports whether a raw key decodes to itself: printable ASCII
// without escapes. Such a key can be compared and used as it is; any other
// one is left to encoding/json.
func PlainKey(key []byte) bool {
	for _, c := range key {
		if c < 0x20 || c >= 0x7f || c == '\\' {
			return false
		}
	}
	return true
}

// Ignorable reports whether encoding/json, decoding into a struct whose
// fields have these JSON names, ignores a member with this raw key: the key
// is plain and matches no name, not even ignoring case.
func Ignorable(key []byte, fields ...string) bool {
	if !PlainKey(key) {
		return false
	}
	for _, f := range fields {
		if bytes.EqualFold(key, []byte(f)) {
			return false
		}
	}
	return true
}

// IsNull reports whether a raw value is the literal null.
func IsNull(value []byte) bool { return string(value) == "null" }

// space marks JSON's whitespace bytes.
var space = [256]bool{' ': true, '\t': true, '\n': true, '\r': true}

// stringPlain marks the bytes that continue a string with nothing to check:
// everything but the quote, the backslash and control characters. Bytes
// above 0x7f are accepted whatever they encode, as encoding/json does.
var stringPlain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func skipSpace(data []byte, i int) int {
	// Indentation comes in runs of spaces: eight at a time.
	for i+8 <= len(data) && binary.LittleEndian.Uint64(data[i:]) == 0x2020202020202020 {
		i += 8
	}
	for i < len(data) && space[data[i]] {
		i++
	}
	return i
}

// skipValue returns the index just past the valid JSON value that starts at
// data[i], or -1 if there is none.
func skipValue(data []byte, i, depth int) int {
	if i >= len(data) {
		return -1
	}
	switch c := data[i]; {
	case c == '"':
		return skipString(data, i+1)
	case c == '{':
		return skipObject(data, i+1, depth+1)
	case c == '[':
		return skipArray(data, i+1, depth+1)
	case c == '-' || (c >= '0' && c <= '9'):
		return skipNumber(data, i)
	case c == 't':
		return skipLiteral(data, i, "true")
	case c == 'f':
		return skipLiteral(data, i, "false")
	case c == 'n':
		return skipLiteral(data, i, "null")
	}
	return -1
}

// skipString returns the index just past the closing quote of the string
// whose contents start at data[i], or -1.
func skipString(data []byte, i int) int {
	for {
		if i = nextSpecial(data, i); i >= len(data) {
			return -1
		}
		switch data[i] {
		case '"':
			return i + 1
		case '\\':
			if i+1 >= len(data) {
				return -1
			}
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(data) || !isHex(data[i+2]) || !isHex(data[i+3]) || !isHex(data[i+4]) || !isHex(data[i+5]) {
					return -1
				}
				i += 6
			default:
				return -1
			}
		default: // a control character
			return -1
		}
	}
}

// nextSpecial returns the index of the first quote, backslash or control
// character at or after data[i], or len(data). Strings are most of a
// request (annotations, managedFields keys, ledger values), so it looks at
// eight bytes at a time.
func nextSpecial(data []byte, i int) int {
	for i+8 <= len(data) {
		x := binary.LittleEndian.Uint64(data[i:])
		if m := zeroBytes(x^(ones*'"')) | zeroBytes(x^(ones*'\\')) | lessThanSpace(x); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
		i += 8
	}
	for i < len(data) && stringPlain[data[i]] {
		i++
	}
	return i
}

// nextQuoteOrBackslash is nextSpecial for a string known to be valid.
func nextQuoteOrBackslash(data []byte, i int) int {
	for i+8 <= len(data) {
		x := binary.LittleEndian.Uint64(data[i:])
		if m := zeroBytes(x^(ones*'"')) | zeroBytes(x^(ones*'\\')); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
		i += 8
	}
	for i < len(data) && data[i] != '"' && data[i] != '\\' {
		i++
	}
	return i
}

const ones, highs = 0x0101010101010101, 0x8080808080808080

// zeroBytes flags the zero bytes of x with their high bit, and
// lessThanSpace the bytes below 0x20 (bytes above 0x7f never match). These
// are the classic bit tricks: a flag can be wrong only above a true match,
// so the lowest flag is always exact.
func zeroBytes(x uint64) uint64 { return (x - ones) &^ x & highs }

func lessThanSpace(x uint64) uint64 { return (x - ones*0x20) &^ x & highs }

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func skipObject(data []byte, i, depth int) int {
	if depth > MaxDepth {
		return -1
	}
	i = skipSpace(data, i)
	if i < len(data) && data[i] == '}' {
		return i + 1
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return -1
		}
		if i = skipString(data, i+1); i < 0 {
			return -1
		}
		i = skipSpace(data, i)
		if i >= len(data) || data[i] != ':' {
			return -1
		}
		if i = skipValue(data, skipSpace(data, i+1), depth); i < 0 {
			return -1
		}
		i = skipSpace(data, i)
		if i >= len(data) {
			return -1
		}
		switch data[i] {
		case '}':
			return i + 1
		case ',':
			i = skipSpace(data, i+1)
		default:
			return -1
		}
	}
}

func skipArray(data []byte, i, depth int) int {
	if depth > MaxDepth {
		return -1
	}
	i = skipSpace(data, i)
	if i < len(data) && data[i] == ']' {
		return i + 1
	}
	for {
		if i = skipValue(data, i, depth); i < 0 {
			return -1
		}
		i = skipSpace(data, i)
		if i >= len(data) {
			return -1
		}
		switch data[i] {
		case ']':
			return i + 1
		case ',':
			i = skipSpace(data, i+1)
		default:
			return -1
		}
	}
}

// skipNumber accepts -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? and
// returns the index just past it. What follows is the caller's to check.
func skipNumber(data []byte, i int) int {
	if data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && data[i] >= '1' && data[i] <= '9':
		i = skipDigits(data, i+1)
	default:
		return -1
	}
	if i < len(data) && data[i] == '.' {
		j := skipDigits(data, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		j := skipDigits(data, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func skipDigits(data []byte, i int) int {
	for i < len(data) && data[i] >= '0' && data[i] <= '9' {
		i++
	}
	return i
}

func skipLiteral(data []byte, i int, lit string) int {
	if len(data)-i < len(lit) || string(data[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// structural marks the bytes skipTrusted stops at inside a container.
var structural = [256]bool{'"': true, '{': true, '}': true, '[': true, ']': true}

// delimiter marks the bytes that end a number or literal.
var delimiter = [256]bool{',': true, '}': true, ']': true, ' ': true, '\t': true, '\n': true, '\r': true}

// skipTrusted returns the index just past the value at data[i], which is
// known to be valid: it matches brackets and skips strings without checking
// anything else. It returns -1 if it runs off the end.
func skipTrusted(data []byte, i int) int {
	if i >= len(data) {
		return -1
	}
	switch data[i] {
	case '"':
		return skipStringTrusted(data, i+1)
	case '{', '[':
		depth := 0
		for i < len(data) {
			// Between strings come only a few bytes (":", ",", digits), so
			// a byte at a time beats eight at a time here.
			for i < len(data) && !structural[data[i]] {
				i++
			}
			if i >= len(data) {
				return -1
			}
			switch data[i] {
			case '"':
				if i = skipStringTrusted(data, i+1); i < 0 {
					return -1
				}
				continue
			case '{', '[':
				depth++
			default: // '}' or ']'
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	}
	for i < len(data) && !delimiter[data[i]] {
		i++
	}
	return i
}

// skipStringTrusted returns the index just past the closing quote of the
// valid string whose contents start at data[i], or -1.
func skipStringTrusted(data []byte, i int) int {
	for {
		if i = nextQuoteOrBackslash(data, i); i >= len(data) {
			return -1
		}
		if data[i] == '"' {
			return i + 1
		}
		i += 2 // an escape: what follows the backslash is never the end
	}
}
