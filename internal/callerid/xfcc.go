package callerid

import (
	"errors"
	"fmt"
	"strings"
)

// maxXFCCElements bounds the elements of one x-forwarded-client-cert line: each proxy on the way adds one, and a
// path of more proxies than this is a client padding the header.
const maxXFCCElements = 32

// SplitXFCC splits an x-forwarded-client-cert value into its elements (one per proxy, comma-separated), each a map
// of its lower-cased keys (By, Hash, Cert, Chain, Subject, URI, DNS) to their unquoted values, in Envoy's format: a
// value with a comma, semicolon or equals sign is double-quoted, with \" inside. The first of a repeated key wins.
func SplitXFCC(v string) ([]map[string]string, error) {
	var elems []map[string]string
	elem := map[string]string{}
	for len(v) > 0 {
		key, value, rest, err := nextPair(v)
		if err != nil {
			return nil, err
		}
		if key != "" {
			if _, dup := elem[key]; !dup {
				elem[key] = value
			}
		}
		if rest == "" || rest[0] == ',' {
			elems = append(elems, elem)
			elem = map[string]string{}
			if len(elems) > maxXFCCElements {
				return nil, fmt.Errorf("more than %d elements", maxXFCCElements)
			}
		}
		if rest != "" {
			rest = rest[1:]
			if rest == "" {
				return nil, errors.New("ends with a separator")
			}
		}
		v = rest
	}
	if len(elems) == 0 {
		return nil, errors.New("empty")
	}
	return elems, nil
}

// nextPair reads key=value up to the next unquoted ';' or ',', which starts rest.
func nextPair(v string) (key, value, rest string, err error) {
	eq := strings.IndexAny(v, "=;,")
	if eq < 0 || v[eq] != '=' {
		return "", "", "", fmt.Errorf("%q: want key=value", clip(v))
	}
	key = strings.ToLower(strings.TrimSpace(v[:eq]))
	v = v[eq+1:]
	if !strings.HasPrefix(v, `"`) {
		end := strings.IndexAny(v, ";,")
		if end < 0 {
			end = len(v)
		}
		if strings.Contains(v[:end], `"`) {
			return "", "", "", fmt.Errorf("%s: a quote inside an unquoted value", key)
		}
		return key, v[:end], v[end:], nil
	}
	var b strings.Builder
	for i := 1; i < len(v); i++ {
		switch c := v[i]; {
		case c == '\\' && i+1 < len(v):
			i++
			b.WriteByte(v[i])
		case c == '"':
			rest = v[i+1:]
			if rest != "" && rest[0] != ';' && rest[0] != ',' {
				return "", "", "", fmt.Errorf("%s: text after the closing quote", key)
			}
			return key, b.String(), rest, nil
		default:
			b.WriteByte(c)
		}
	}
	return "", "", "", fmt.Errorf("%s: unterminated quote", key)
}
