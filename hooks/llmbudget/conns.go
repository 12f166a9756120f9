package main

import "flag"

// Defaults of the connection bounds beside --max-connections; each is lowered to a quarter of --max-connections
// when that is fewer and the flag is not given.
const (
	// defaultServeConnsPerPeer bounds one address's connections to serve: Metacontroller, one Pod, holds at most
	// one per worker of its controllers.
	defaultServeConnsPerPeer = 128
	// defaultAuthzConnsPerPeer bounds one address's connections to authz: a gateway replica holds about one per
	// worker thread and concurrent check.
	defaultAuthzConnsPerPeer = 256
	// defaultUntrustedConns bounds the connections of authz's peers outside every gateway's CIDRs together: each is
	// answered once and closed, so a few serve a misconfigured gateway's 403s.
	defaultUntrustedConns = 16
)

// connBound is the bound a flag gives: its value when given, else the default or a quarter of maxConns (at least
// 1), whichever is fewer, so that lowering --max-connections alone keeps one peer to a share of it. A bound outside
// 1 to maxConns is a usage error naming the flag.
func connBound(fs *flag.FlagSet, name string, value, maxConns int) (int, error) {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	if !given {
		value = min(value, max(maxConns/4, 1))
	}
	if value < 1 || value > maxConns {
		return value, badUsage(fs, "--%s %d: must be from 1 to --max-connections (%d)", name, value, maxConns)
	}
	return value, nil
}
