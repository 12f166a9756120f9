// Package text holds the helpers for what a message echoes from its input: cut by bytes (the API server stores
// bytes), never inside a character.
package text

import (
	"strconv"
	"unicode/utf8"
)

// Abbreviate cuts s to at most n bytes, on a character boundary, marking the cut with "...": what a status
// echoes from its input stays small enough for the API server to store, whatever the input.
func Abbreviate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return prefix(s, n-len("...")) + "..."
}

// Quote quotes an input for an error message, shortened past quoteAt bytes so that the message stays readable.
func Quote(s string) string {
	if len(s) > quoteAt {
		return strconv.Quote(prefix(s, quoteAt)) + "..."
	}
	return strconv.Quote(s)
}

const quoteAt = 48

// prefix is the longest start of s of at most n bytes that ends on a character boundary.
func prefix(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
