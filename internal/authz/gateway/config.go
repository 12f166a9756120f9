// The configuration: ParseConfig reads the configuration file of llmbudget authz: the gateways it answers, how each
// tells who its caller is, what happens to a caller it cannot tell, and how old its cache may grow before its answers
// say so.
//
// Guarantees:
//   - The file is one YAML (or JSON) document, read as kubectl reads one (package manifest) and decoded strictly:
//     an unknown key is an error naming its path, a repeated key one naming its line, and so is a second
//     document, so a misspelt or repeated gateway option never silently trusts more or less than meant.
//   - A Config that ParseConfig returns is usable: its gateways resolve (callerid.go: each address a CIDR that
//     neither trusts every peer nor, IPv4-mapped, none; each header a valid header name), its unknownCaller is
//     Admit or Refuse, and its maxCacheAge is positive. Every problem is named by its field path, in the API
//     server's words.
//   - The file is at most MaxConfigBytes long.

package gateway

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/llmbudget/llmbudget/internal/authz"
	"github.com/llmbudget/llmbudget/internal/decode"
	"github.com/llmbudget/llmbudget/internal/manifest"
)

// MaxConfigBytes bounds the configuration file.
const MaxConfigBytes = 1 << 20

// DefaultMaxCacheAge is how old the cache may grow by default before answers say it is stale.
const DefaultMaxCacheAge = 30 * time.Second

// File is the configuration file.
type File struct {
	// Gateways are the gateways allowed to call, and how each tells its caller.
	Gateways []Gateway `json:"gateways"`
	// UnknownCaller is what happens to a call whose caller cannot be told: Admit (the default) or Refuse.
	UnknownCaller authz.UnknownCaller `json:"unknownCaller,omitempty"`
	// MaxCacheAge is a Go duration ("30s"): past it, answers say they are stale and Closed budgets are unavailable.
	MaxCacheAge string `json:"maxCacheAge,omitempty"`
}

// Config is a parsed File.
type Config struct {
	Resolver      *Resolver
	UnknownCaller authz.UnknownCaller
	MaxCacheAge   time.Duration
	// SourceMode is whether a gateway is in source mode, so that Pods must be watched.
	SourceMode bool
	// Identities is the path of the first gateway's identities (nil when none names any): they match only a
	// client certificate that authz verifies, so the program refuses them without --tls-client-ca-file.
	Identities *field.Path
}

// ParseConfig reads and checks a configuration file.
func ParseConfig(data []byte) (Config, error) {
	if len(data) > MaxConfigBytes {
		return Config{}, fmt.Errorf("the file is %d bytes, more than the %d allowed", len(data), MaxConfigBytes)
	}
	docs, merr := manifest.Docs("", data)
	switch {
	case merr != nil && merr.Line > 0:
		return Config{}, fmt.Errorf("line %d: %s", merr.Line, merr.Message)
	case merr != nil:
		return Config{}, errors.New(merr.Message)
	case len(docs) > 1:
		return Config{}, fmt.Errorf("line %d: a second YAML document: the configuration is one", docs[1].Line().Line)
	}
	var f File
	if len(docs) == 1 {
		if err := decode.Strict(docs[0].JSON, &f, ""); err != nil {
			return Config{}, err
		}
	}
	var errs []error
	c := Config{UnknownCaller: cmp.Or(f.UnknownCaller, authz.AdmitUnknown), MaxCacheAge: DefaultMaxCacheAge}
	var err error
	if c.Resolver, err = NewResolver(f.Gateways); err != nil {
		errs = append(errs, err)
	}
	if c.UnknownCaller != authz.AdmitUnknown && c.UnknownCaller != authz.RefuseUnknown {
		errs = append(errs, field.NotSupported(field.NewPath("unknownCaller"), f.UnknownCaller,
			[]authz.UnknownCaller{authz.AdmitUnknown, authz.RefuseUnknown}))
	}
	if f.MaxCacheAge != "" {
		if c.MaxCacheAge, err = time.ParseDuration(f.MaxCacheAge); err != nil || c.MaxCacheAge <= 0 {
			errs = append(errs, field.Invalid(field.NewPath("maxCacheAge"), f.MaxCacheAge,
				"must be a positive duration such as 30s"))
		}
	}
	if len(errs) > 0 {
		return Config{}, utilerrors.Flatten(utilerrors.NewAggregate(errs))
	}
	for i, g := range f.Gateways {
		c.SourceMode = c.SourceMode || g.Mode == ModeSource
		if c.Identities == nil && len(g.Identities) > 0 {
			c.Identities = field.NewPath("gateways").Index(i).Child("identities")
		}
	}
	return c, nil
}

// CheckClientCA refuses gateways' identities when no client CA verifies the certificates they would match: without
// one, no certificate is verified and such a gateway would never be matched.
func (c Config) CheckClientCA(given bool) error {
	if c.Identities != nil && !given {
		return field.Forbidden(c.Identities, "matches only a client certificate verified against "+
			"--tls-client-ca-file, which is not given")
	}
	return nil
}
