package gateway

import (
	"errors"
	"fmt"
	"strings"
)

// RightmostXFCC reads the rightmost element of an x-forwarded-client-cert value: the one the gateway itself sets
// or appends (Envoy's SANITIZE_SET, APPEND_FORWARD). It returns the element's lower-cased keys (By, Hash, Cert,
// Chain, Subject, URI, DNS) with their unquoted values; the first of a repeated key wins, and a URI given twice is
// an error, as an X.509 SVID has exactly one.
//
// The value is read backwards from its end, in Envoy's format: pairs key=value separated by ';', elements by ',',
// and a value with a comma, semicolon, equals sign or quote double-quoted, with \" and \\ inside. Reading stops at
// the ',' before the rightmost element, so nothing before it, which the client may have written (an unterminated
// quote, a bare word, a trailing comma, any number of elements), is ever parsed: for any prefix p and any element
// e in that format, RightmostXFCC(p + "," + e) reads e alone.
func RightmostXFCC(v string) (map[string]string, error) {
	if strings.TrimSpace(v) == "" {
		return nil, errors.New("empty")
	}
	elem := map[string]string{}
	uris := 0
	end := len(v)
	for {
		value, eq, err := valueBefore(v, end)
		if err != nil {
			return nil, err
		}
		sep := strings.LastIndexAny(v[:eq], ";,")
		key := strings.ToLower(strings.TrimSpace(v[sep+1 : eq]))
		if !isKey(key) {
			return nil, fmt.Errorf("%q: want key=value", clip(strings.TrimSpace(v[sep+1:end])))
		}
		elem[key] = value // read right to left: the leftmost, first, of a repeated key is written last
		if key == "uri" {
			uris++
		}
		if sep < 0 || v[sep] == ',' {
			break
		}
		end = sep
	}
	if uris > 1 {
		return nil, fmt.Errorf("the rightmost element has %d URIs, want one", uris)
	}
	return elem, nil
}

// valueBefore reads the value that ends at end, and the index of the '=' before it.
func valueBefore(v string, end int) (value string, eq int, err error) {
	if end > 0 && v[end-1] == '"' {
		if escaped(v, end-1) {
			return "", 0, errors.New("a value ends in an escaped quote")
		}
		for i := end - 2; i >= 0; i-- {
			if v[i] != '"' || escaped(v, i) {
				continue
			}
			if i == 0 || v[i-1] != '=' {
				return "", 0, errors.New("text before an opening quote")
			}
			return unescape(v[i+1 : end-1]), i - 1, nil
		}
		return "", 0, errors.New("unterminated quote")
	}
	i := strings.LastIndexAny(v[:end], `=;,"`)
	switch {
	case i >= 0 && v[i] == '"':
		return "", 0, errors.New("a quote inside an unquoted value")
	case i < 0 || v[i] != '=':
		return "", 0, fmt.Errorf("%q: want key=value", clip(strings.TrimSpace(v[i+1:end])))
	}
	return v[i+1 : end], i, nil
}

// escaped is whether the quote at i follows an odd number of backslashes.
func escaped(v string, i int) bool {
	n := 0
	for i--; i >= 0 && v[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// isKey is whether k is a key of Envoy's format: letters only.
func isKey(k string) bool {
	if k == "" {
		return false
	}
	for _, c := range []byte(k) {
		if c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}
