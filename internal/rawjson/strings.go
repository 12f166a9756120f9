package rawjson

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// String decodes a raw JSON value, valid JSON such as Members hands over, as
// encoding/json decodes it into a Go string, and reports false when the
// value is not a string. Values
// without escapes, or with only the one-character escapes, are decoded here;
// \u escapes and escapes mixed with non-ASCII text go to encoding/json, for
// its handling of surrogates and invalid UTF-8.
func String(value []byte) (string, bool) {
	if len(value) < 2 || value[0] != '"' || value[len(value)-1] != '"' {
		return "", false
	}
	content := value[1 : len(value)-1]
	escapes, ascii := bytes.IndexByte(content, '\\') >= 0, isASCII(content)
	switch {
	case !escapes && (ascii || utf8.Valid(content)):
		return string(content), true
	case escapes && ascii:
		if s, ok := unescape(content); ok {
			return s, true
		}
	}
	var s string
	err := json.Unmarshal(value, &s)
	return s, err == nil
}

// unescape decodes the one-character escapes of valid JSON string content;
// it reports false on a \u escape.
func unescape(content []byte) (string, bool) {
	var out strings.Builder // one allocation: String does not copy
	out.Grow(len(content))
	for len(content) > 0 {
		i := bytes.IndexByte(content, '\\')
		if i < 0 {
			out.Write(content)
			break
		}
		out.Write(content[:i])
		var c byte
		switch content[i+1] {
		case '"', '\\', '/':
			c = content[i+1]
		case 'b':
			c = '\b'
		case 'f':
			c = '\f'
		case 'n':
			c = '\n'
		case 'r':
			c = '\r'
		case 't':
			c = '\t'
		default:
			return "", false
		}
		out.WriteByte(c)
		content = content[i+2:]
	}
	return out.String(), true
}

// StringMap decodes a raw JSON value, valid JSON such as Members or Walk
// hands over, as encoding/json decodes it into a map[string]string, such as
// a ConfigMap's data: null is a nil map. It reports false when the value is
// not an object of strings with plain keys.
func StringMap(value []byte) (map[string]string, bool) {
	if IsNull(value) {
		return nil, true
	}
	m := map[string]string{}
	ok := Walk(value, func(key, v []byte) bool {
		if !PlainKey(key) {
			return false
		}
		s, ok := String(v)
		m[string(key)] = s // a repeated key: the last wins, as in encoding/json
		return ok
	})
	return m, ok
}

func isASCII(b []byte) bool {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b)&highs != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
