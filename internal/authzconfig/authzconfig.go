// Package authzconfig reads the configuration file of llmbudget authz: the gateways it answers, how each tells who
// its caller is, what happens to a caller it cannot tell, and how old its cache may grow before its answers say so.
//
// Guarantees:
//   - The file is YAML (or JSON) decoded strictly: an unknown or repeated key is an error naming its path, so a
//     misspelt gateway option never silently trusts more than meant.
//   - A File that Parse returns is usable: its gateways resolve (package callerid), its unknownCaller is Admit or
//     Refuse, and its maxCacheAge is positive.
//   - The file is at most MaxBytes long.
package authzconfig

import (
	"cmp"
	"fmt"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/llmbudget/llmbudget/internal/authz"
	"github.com/llmbudget/llmbudget/internal/callerid"
	"github.com/llmbudget/llmbudget/internal/decode"
)

// MaxBytes bounds the configuration file.
const MaxBytes = 1 << 20

// DefaultMaxCacheAge is how old the cache may grow by default before answers say it is stale.
const DefaultMaxCacheAge = 30 * time.Second

// File is the configuration file.
type File struct {
	// Gateways are the gateways allowed to call, and how each tells its caller.
	Gateways []callerid.Gateway `json:"gateways"`
	// UnknownCaller is what happens to a call whose caller cannot be told: Admit (the default) or Refuse.
	UnknownCaller authz.UnknownCaller `json:"unknownCaller,omitempty"`
	// MaxCacheAge is a Go duration ("30s"): past it, answers say they are stale and Closed budgets are unavailable.
	MaxCacheAge string `json:"maxCacheAge,omitempty"`
}

// Config is a parsed File.
type Config struct {
	Resolver      *callerid.Resolver
	UnknownCaller authz.UnknownCaller
	MaxCacheAge   time.Duration
	// SourceMode is whether a gateway is in source mode, so that Pods must be watched.
	SourceMode bool
}

// Parse reads and checks a configuration file.
func Parse(data []byte) (Config, error) {
	if len(data) > MaxBytes {
		return Config{}, fmt.Errorf("the file is %d bytes, more than the %d allowed", len(data), MaxBytes)
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return Config{}, fmt.Errorf("not YAML: %w", err)
	}
	var f File
	if err := decode.Strict(js, &f, ""); err != nil {
		return Config{}, err
	}
	c := Config{UnknownCaller: cmp.Or(f.UnknownCaller, authz.AdmitUnknown), MaxCacheAge: DefaultMaxCacheAge}
	if c.UnknownCaller != authz.AdmitUnknown && c.UnknownCaller != authz.RefuseUnknown {
		return Config{}, fmt.Errorf("unknownCaller: %q is neither Admit nor Refuse", f.UnknownCaller)
	}
	if f.MaxCacheAge != "" {
		if c.MaxCacheAge, err = time.ParseDuration(f.MaxCacheAge); err != nil || c.MaxCacheAge <= 0 {
			return Config{}, fmt.Errorf("maxCacheAge: %q is no positive duration like 30s", f.MaxCacheAge)
		}
	}
	if c.Resolver, err = callerid.New(f.Gateways); err != nil {
		return Config{}, err
	}
	for _, g := range f.Gateways {
		c.SourceMode = c.SourceMode || g.Mode == callerid.ModeSource
	}
	return c, nil
}
