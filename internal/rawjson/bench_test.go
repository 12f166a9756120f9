package rawjson_test

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/llmbudget/llmbudget/internal/rawjson"
)

func benchBody(b *testing.B) []byte {
	raw, err := os.ReadFile("../../test/fixtures/budget/sync/capture-over-budget-with-children.request.json")
	if err != nil {
		b.Fatal(err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		b.Fatal(err)
	}
	return compact.Bytes()
}

func BenchmarkValid(b *testing.B) {
	body := benchBody(b)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if !rawjson.Valid(body) {
			b.Fatal("invalid")
		}
	}
}

func BenchmarkWalk(b *testing.B) {
	body := benchBody(b)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		rawjson.Walk(body, func(_, _ []byte) bool { return true })
	}
}

func BenchmarkEncodingJSONValid(b *testing.B) {
	body := benchBody(b)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if !json.Valid(body) {
			b.Fatal("invalid")
		}
	}
}
