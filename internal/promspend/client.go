package promspend

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	"github.com/prometheus/common/model"

	"github.com/llmbudget/llmbudget/internal/text"
)

// Limits bounds one answer.
type Limits struct {
	Body       int64 // bytes of the answer's body, after decompression
	Series     int   // series in the answer
	LabelValue int   // bytes of one label value
}

// DefaultLimits are far above what a budget's query answers (a series per model, a few hundred bytes each) and far
// below what would exhaust a writer with a few hundred MiB of memory.
var DefaultLimits = Limits{Body: 32 << 20, Series: 10_000, LabelValue: 1024}

// Allowance bounds all the answers to one plan's queries together, however many windows the plan has: a 30-day
// DailyLedger asks about a hundred queries, each of which Limits alone lets answer 32 MiB.
type Allowance struct {
	Series int   // series in all the answers
	Body   int64 // bytes of all the answers' bodies, after decompression
}

// DefaultAllowance is what Ask allows one plan (one budget): its answers hold a series per model and window,
// a few hundred bytes each, so even a ledger of 31 days over a hundred models stays far below it.
var DefaultAllowance = Allowance{Series: 20_000, Body: 16 << 20}

// ErrOverAllowance is wrapped by the error of a plan whose answers pass its Allowance.
var ErrOverAllowance = errors.New("answers past the cap of one budget's answers")

// MaxConfigMapBytes is the most an encoded spend ConfigMap may hold: the API server stores no ConfigMap whose
// data passes 1 MiB, so a larger one is refused before it is printed or applied.
const MaxConfigMapBytes = 1 << 20

// CheckConfigMapSize refuses the encoded ConfigMap name when it passes MaxConfigMapBytes.
func CheckConfigMapSize(name string, encoded []byte) error {
	if len(encoded) <= MaxConfigMapBytes {
		return nil
	}
	return fmt.Errorf("ConfigMap %s encodes to %d bytes, more than the %s the API server stores "+
		"(promspend.MaxConfigMapBytes): fewer models or ledger days would fit", name, len(encoded),
		bytesIn(MaxConfigMapBytes))
}

// Excerpt is how many bytes of the server's words an error or warning quotes.
const Excerpt = 256

// maxWarnings is how many of an answer's warnings Query returns.
const maxWarnings = 10

// Client queries one Prometheus.
type Client struct {
	http   promapi.Client
	limits Limits
}

// NewClient returns a client of the Prometheus at address (like http://prometheus:9090) with limits.
func NewClient(address string, limits Limits) (*Client, error) {
	hc := &http.Client{
		Transport:     bounded{next: promapi.DefaultRoundTripper, limit: limits.Body},
		CheckRedirect: sameOrigin,
	}
	c, err := promapi.NewClient(promapi.Config{Address: address, Client: hc})
	if err != nil {
		return nil, err
	}
	return &Client{http: c, limits: limits}, nil
}

// response is the query API's envelope; data is decoded only on success, its result one series at a time.
type response struct {
	Status    string   `json:"status"`
	Data      within   `json:"data"`
	ErrorType string   `json:"errorType"`
	Error     string   `json:"error"`
	Warnings  []string `json:"warnings"`
}

// within is a JSON value left undecoded, as json.RawMessage, but not copied: it is a part of the answer's body,
// which outlives it. A copy of a large answer's data, and another of its result, tripled what it held.
type within []byte

func (w *within) UnmarshalJSON(b []byte) error {
	*w = b
	return nil
}

// Query evaluates promql at the instant at (POST /api/v1/query) and returns its vector and Prometheus' warnings
// (at most 10, each abbreviated).
func (c *Client) Query(ctx context.Context, promql string, at time.Time) (model.Vector, []string, error) {
	vec, said, _, err := c.QueryWithin(ctx, promql, at, Allowance{Series: c.limits.Series, Body: c.limits.Body})
	return vec, said, err
}

// QueryWithin is Query reading at most what is left of a plan's allowance, past which it fails with
// ErrOverAllowance; it also returns the bytes of the answer's body.
func (c *Client) QueryWithin(ctx context.Context, promql string, at time.Time,
	left Allowance) (model.Vector, []string, int64, error) {
	limit := bodyLimit{bytes: c.limits.Body}
	if left.Body < limit.bytes {
		limit = bodyLimit{bytes: max(left.Body, 0), ofPlan: true}
	}
	ctx = context.WithValue(ctx, bodyLimitKey{}, limit)
	vec, said, body, err := c.query(ctx, promql, at, left.Series)
	return vec, said, int64(len(body)), err
}

func (c *Client) query(ctx context.Context, promql string, at time.Time,
	seriesLeft int) (model.Vector, []string, []byte, error) {
	u := c.http.URL("/api/v1/query", nil)
	form := url.Values{"query": {promql}, "time": {strconv.FormatFloat(float64(at.UnixMilli())/1e3, 'f', 3, 64)}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader(form.Encode()))
	if err != nil {
		return nil, nil, nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, body, err := c.http.Do(ctx, req)
	if err != nil {
		return nil, nil, nil, excerpt{err}
	}
	var r response
	jsonErr := json.Unmarshal(body, &r)
	said := warnings(r.Warnings)
	switch {
	case jsonErr == nil && r.Status == "error":
		return nil, said, body, excerpt{fmt.Errorf("%s: %s", r.ErrorType, r.Error)}
	case resp.StatusCode/100 != 2:
		return nil, said, body, excerpt{fmt.Errorf("%s: %s", resp.Status, body)}
	case jsonErr != nil:
		return nil, said, body, excerpt{fmt.Errorf("answer is not the query API's JSON: %w", jsonErr)}
	case r.Status != "success":
		return nil, said, body, excerpt{fmt.Errorf("answer has status %q, not success", r.Status)}
	}
	vec, err := c.vector(r.Data, seriesLeft)
	return vec, said, body, err
}

// vector decodes data's result, refusing anything but a vector of at most Limits.Series (and seriesLeft) plain
// samples whose label values are at most Limits.LabelValue bytes. It stops at the first series past the limit.
func (c *Client) vector(data within, seriesLeft int) (model.Vector, error) {
	var d struct {
		ResultType model.ValueType `json:"resultType"`
		Result     within          `json:"result"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, excerpt{fmt.Errorf("answer's data: %w", err)}
	}
	if d.ResultType != model.ValVector {
		return nil, excerpt{fmt.Errorf("answered a %s, not a vector", d.ResultType)}
	}
	dec := json.NewDecoder(bytes.NewReader(d.Result))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, errors.New("answer's result is not a list")
	}
	var vec model.Vector
	for dec.More() {
		if len(vec) == seriesLeft && seriesLeft < c.limits.Series {
			return nil, fmt.Errorf("%w: answered more than the %d series left", ErrOverAllowance, max(seriesLeft, 0))
		}
		if len(vec) == c.limits.Series {
			return nil, fmt.Errorf("answered more than the %d series allowed: a query sums by model, "+
				"so is this the Prometheus (and the selector) you meant?", c.limits.Series)
		}
		s := new(model.Sample)
		if err := dec.Decode(s); err != nil {
			return nil, excerpt{fmt.Errorf("answer's series %d: %w", len(vec)+1, err)}
		}
		if s.Histogram != nil {
			return nil, fmt.Errorf("answered a histogram for %s, not a number",
				text.Abbreviate(s.Metric.String(), Excerpt/2))
		}
		for name, value := range s.Metric {
			if len(value) > c.limits.LabelValue {
				return nil, fmt.Errorf("answered a series whose label %s holds %d bytes, more than the %d "+
					"allowed: %q", text.Abbreviate(string(name), Excerpt/4), len(value), c.limits.LabelValue,
					text.Abbreviate(string(value), Excerpt/4))
			}
		}
		vec = append(vec, s)
	}
	return vec, nil
}

// warnings are at most maxWarnings of ws, each abbreviated, and how many more there were.
func warnings(ws []string) []string {
	var said []string
	for i, w := range ws {
		if i == maxWarnings {
			return append(said, fmt.Sprintf("and %d more warnings", len(ws)-i))
		}
		said = append(said, text.Abbreviate(w, Excerpt))
	}
	return said
}

// excerpt is an error quoting at most Excerpt bytes of its cause, which errors.Is and errors.As still see.
type excerpt struct{ err error }

func (e excerpt) Error() string { return text.Abbreviate(e.err.Error(), Excerpt) }
func (e excerpt) Unwrap() error { return e.err }

// sameOrigin refuses a redirect to another scheme or host, and stops after 10 as net/http's default does.
func sameOrigin(req *http.Request, via []*http.Request) error {
	first := via[0].URL
	if req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
		return fmt.Errorf("redirect from %s://%s to %s://%s refused: only redirects within the same host are followed",
			first.Scheme, first.Host, req.URL.Scheme, text.Abbreviate(req.URL.Host, Excerpt))
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

// bounded is a RoundTripper whose response bodies fail once they pass limit bytes.
type bounded struct {
	next  http.RoundTripper
	limit int64
}

// bodyLimit, in a request's context, lowers bounded's limit to what is left of a plan's allowance.
type bodyLimit struct {
	bytes  int64
	ofPlan bool // the limit is what is left of the plan's Allowance, not Limits.Body
}

type bodyLimitKey struct{}

func (b bounded) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := b.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	limit, _ := req.Context().Value(bodyLimitKey{}).(bodyLimit)
	if limit.bytes == 0 && !limit.ofPlan || limit.bytes > b.limit {
		limit = bodyLimit{bytes: b.limit}
	}
	share, _ := req.Context().Value(shareKey{}).(*Share)
	resp.Body = &limitedBody{ReadCloser: resp.Body, left: limit.bytes, limit: limit, share: share}
	return resp, nil
}

// ErrTooLarge is wrapped by the error of an answer larger than Limits.Body.
var ErrTooLarge = errors.New("answer too large")

type limitedBody struct {
	io.ReadCloser
	left  int64
	limit bodyLimit
	share *Share // of the run's Memory, when the query has one
	err   error  // of the share, once it could not take more
}

func (l *limitedBody) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	if l.left < 0 {
		return 0, l.tooLarge()
	}
	// Read one byte past the limit: an answer of exactly limit bytes is whole.
	if int64(len(p)) > l.left+1 {
		p = p[:l.left+1]
	}
	n, err := l.ReadCloser.Read(p)
	l.left -= int64(n)
	if l.left < 0 {
		return 0, l.tooLarge()
	}
	if l.share != nil && n > 0 {
		if l.err = l.share.use(int64(n)); l.err != nil {
			return 0, l.err
		}
	}
	return n, err
}

func (l *limitedBody) tooLarge() error {
	if l.limit.ofPlan {
		return fmt.Errorf("%w: the answer passed the %s left", ErrOverAllowance, bytesIn(l.limit.bytes))
	}
	return fmt.Errorf("%w: more than %s, the limit of one answer", ErrTooLarge, bytesIn(l.limit.bytes))
}

// bytesIn is n in MiB when it is a whole number of them, else in bytes.
func bytesIn(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
