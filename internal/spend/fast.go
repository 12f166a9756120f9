package spend

import (
	"strconv"
	"strings"

	"github.com/llmbudget/llmbudget/internal/money"
)

// A DailyLedger holds one value per day, and every sync reads all of them
// (a broken day anywhere must not pass unnoticed), so these fast paths take
// the common well-formed cases without encoding/json's tokenizer or time's
// layout parser. Each one only ever accepts; anything unusual, valid or not,
// goes to the general code, which alone produces errors.

// parseFlatObject is parseObject for {"costUSD": "12.34", "inputTokens":
// 1200, "outputTokens": 340}: those fields only (no models), each at most
// once, costUSD present, no escapes, whitespace as JSON allows. It reports
// false for anything else.
func parseFlatObject(s string) (Usage, bool) {
	var u Usage
	var seen [3]bool
	i := skipWS(s, 0)
	if i >= len(s) || s[i] != '{' {
		return Usage{}, false
	}
	i = skipWS(s, i+1)
	for {
		if i >= len(s) || s[i] != '"' {
			return Usage{}, false
		}
		end := strings.IndexByte(s[i+1:], '"')
		if end < 0 {
			return Usage{}, false
		}
		key := s[i+1 : i+1+end]
		i = skipWS(s, i+end+2)
		if i >= len(s) || s[i] != ':' {
			return Usage{}, false
		}
		i = skipWS(s, i+1)
		var ok bool
		switch key {
		case fieldCost:
			ok = !seen[0]
			seen[0] = true
			u.CostUSD, i, ok = flatCost(s, i, ok)
		case fieldInput:
			ok = !seen[1]
			seen[1] = true
			u.InputTokens, i, ok = flatTokens(s, i, ok)
		case fieldOutput:
			ok = !seen[2]
			seen[2] = true
			u.OutputTokens, i, ok = flatTokens(s, i, ok)
		}
		if !ok {
			return Usage{}, false
		}
		i = skipWS(s, i)
		if i >= len(s) {
			return Usage{}, false
		}
		switch s[i] {
		case ',':
			i = skipWS(s, i+1)
			continue
		case '}':
			if !seen[0] || skipWS(s, i+1) != len(s) {
				return Usage{}, false
			}
			return u, true
		}
		return Usage{}, false
	}
}

// flatCost reads a decimal string or number at s[i] when ok.
func flatCost(s string, i int, ok bool) (money.Amount, int, bool) {
	if !ok || i >= len(s) {
		return money.Amount{}, i, false
	}
	var text string
	if s[i] == '"' {
		end := strings.IndexByte(s[i+1:], '"')
		if end < 0 {
			return money.Amount{}, i, false
		}
		text, i = s[i+1:i+1+end], i+end+2
	} else {
		end := numberEnd(s, i)
		if end < 0 {
			return money.Amount{}, i, false
		}
		text, i = s[i:end], end
	}
	a, err := money.Parse(text) // refuses escapes and control characters too
	return a, i, err == nil
}

// flatTokens reads null or a non-negative integer at s[i] when ok.
func flatTokens(s string, i int, ok bool) (int64, int, bool) {
	if !ok {
		return 0, i, false
	}
	if strings.HasPrefix(s[i:], "null") {
		return 0, i + len("null"), true
	}
	end := numberEnd(s, i)
	if end < 0 || s[i] == '-' {
		return 0, i, false
	}
	n, err := strconv.ParseInt(s[i:end], 10, 64)
	return n, end, err == nil
}

// numberEnd returns the end of the JSON number at s[i], or -1 if there is
// none: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func numberEnd(s string, i int) int {
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		i = digitsEnd(s, i+1)
	default:
		return -1
	}
	if i < len(s) && s[i] == '.' {
		j := digitsEnd(s, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := digitsEnd(s, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func digitsEnd(s string, i int) int {
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

func skipWS(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// isCanonicalDate reports whether s is "YYYY-MM-DD" naming a real day of the
// proleptic Gregorian calendar, which is what checkDate accepts.
func isCanonicalDate(s string) bool {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return false
	}
	for _, i := range [...]int{0, 1, 2, 3, 5, 6, 8, 9} {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	year := int(s[0]-'0')*1000 + int(s[1]-'0')*100 + int(s[2]-'0')*10 + int(s[3]-'0')
	month := int(s[5]-'0')*10 + int(s[6]-'0')
	day := int(s[8]-'0')*10 + int(s[9]-'0')
	if month < 1 || month > 12 || day < 1 {
		return false
	}
	days := [...]int{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}[month-1]
	if month == 2 && year%4 == 0 && (year%100 != 0 || year%400 == 0) {
		days = 29
	}
	return day <= days
}
