package main

import (
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func nsObject(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// overshootTarget is the most a projected block may overshoot a burn of length l, in percent of the limit.
func overshootTarget(l time.Duration) float64 {
	switch {
	case l <= 2*time.Minute:
		return 5
	case l <= 10*time.Minute:
		return 1
	}
	return 0.5
}

// firstBlock is the first status the driver wrote that blocks, when, and the condition Blocking's reason.
func firstBlock(d *driver, b *burn) (statusAt, string, bool) {
	for _, s := range d.written(b.ns + "/agents") {
		e, _ := s.status["enforcement"].(map[string]any)
		if blocking, _ := e["blocking"].(bool); !blocking {
			continue
		}
		reason := ""
		conds, _ := s.status["conditions"].([]any)
		for _, c := range conds {
			if m, _ := c.(map[string]any); m["type"] == "Blocking" {
				reason, _ = m["reason"].(string)
			}
		}
		return s, reason, true
	}
	return statusAt{}, "", false
}

// projectedCrossing is status.projection.limitReachedAt: when spend growing at the burn rate reaches the limit.
func projectedCrossing(status map[string]any) (time.Time, bool) {
	p, _ := status["projection"].(map[string]any)
	at, _ := p["limitReachedAt"].(string)
	t, err := time.Parse(time.RFC3339, at)
	return t, err == nil
}

// statusOvershoot is the last status's overshoot percent, as the budget reports it, or "-".
func statusOvershoot(d *driver, b *burn) string {
	st := d.written(b.ns + "/agents")
	if len(st) == 0 {
		return "-"
	}
	o, _ := st[len(st)-1].status["overshoot"].(map[string]any)
	if pct, ok := o["percent"].(string); ok {
		return pct
	}
	return "-"
}

func usd(mu int64) string {
	sign := ""
	if mu < 0 {
		sign, mu = "-", -mu
	}
	return fmt.Sprintf("%s%d.%02d", sign, mu/1e6, mu%1e6/1e4)
}

// report prints the table and returns the targets missed.
func report(o options, burns []*burn, up *upstream, d *driver, interval time.Duration) []string {
	var missed []string
	miss := func(b *burn, format string, args ...any) {
		missed = append(missed, b.name+": "+fmt.Sprintf(format, args...))
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Println()
	fmt.Fprintln(tw, "burn\tblockOn\tcrossing at\tfirst 429 at\t429 - crossing\t429 - projected\t"+
		"overshoot USD\tovershoot %\tfalse refusals\tserved after 429\tblock written at\tblocked by\tstatus overshoot %\t")
	offBound := o.scrape + interval + 2*time.Second
	for _, b := range burns {
		b.mu.Lock()
		spent, crossed := up.spent(b.key)
		over := spent - b.limitMu
		pct := float64(over) / float64(b.limitMu) * 100
		delay, projDelay, blockedBy, blockAt := "-", "-", "-", "-"
		block, reason, blocked := firstBlock(d, b)
		if blocked {
			blockedBy, blockAt = reason, since(b.started, block.at)
		}
		proj, hasProj := time.Time{}, false
		if blocked {
			proj, hasProj = projectedCrossing(block.status)
		}
		if !b.first429.IsZero() && !crossed.IsZero() {
			delay = fmt.Sprintf("%+.1f s", b.first429.Sub(crossed).Seconds())
		}
		if !b.first429.IsZero() && hasProj {
			projDelay = fmt.Sprintf("%+.1f s", b.first429.Sub(proj).Seconds())
		}
		mode := b.blockOn
		if mode == "" {
			mode = "(unset)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%+.2f\t%d\t%d\t%s\t%s\t%s\t\n", short(b.length), mode,
			since(b.started, crossed), since(b.started, b.first429), delay, projDelay, usd(over), pct,
			b.falseRefused, b.servedAfter, blockAt, blockedBy, statusOvershoot(d, b))

		switch {
		case b.first429.IsZero():
			miss(b, "never refused (%d served, %s spent of %s)", b.served, usd(spent), usd(b.limitMu))
		case b.blockOn == "Projected":
			if pct > overshootTarget(b.length) {
				miss(b, "overshoot %.2f %% > %.1f %%", pct, overshootTarget(b.length))
			}
			if !hasProj {
				miss(b, "the blocking status states no projected crossing")
			} else if late := b.first429.Sub(proj); late > 2*time.Second {
				miss(b, "first 429 %.1f s after the projected crossing > 2 s", late.Seconds())
			}
		default:
			if !crossed.IsZero() && b.first429.Sub(crossed) > offBound {
				miss(b, "first 429 %.1f s after the true crossing > %s (scrape %s + writer %s + 2 s)",
					b.first429.Sub(crossed).Seconds(), offBound, o.scrape, interval)
			}
		}
		if b.falseRefused > 0 {
			miss(b, "%d false refusals (429 below 95 %% of the limit; the first at %s spent)", b.falseRefused,
				usd(b.spentAt429))
		}
		if b.failed > 0 {
			miss(b, "%d calls neither served nor refused: %s", b.failed, b.failure)
		}
		b.mu.Unlock()
	}
	_ = tw.Flush()
	return missed
}
