// Connection bounds: a LimitedListener bounds the connections a server holds open so that no peer can take the slots
// its real clients need: at most Max in all, at most PerPeer from one address, and at most Untrusted from all the
// addresses that Trusted refuses together. When a new connection would pass a bound, the longest idle keep-alive
// connection within that bound is closed to make room.
//
// Expected Flow:
//  1. Wrap the server's listener with LimitConns and set the server's ConnState to the LimitedListener's.
//  2. Accept admits each connection: within every bound it is served; past one, the longest idle connection
//     within that bound is closed for it; with none idle, one past PerPeer or Untrusted is closed at once, and
//     one past Max waits for a slot, as netutil.LimitListener's do.
//
// Guarantees:
//   - A peer holds at most PerPeer connections, and the peers Trusted refuses at most Untrusted together, so
//     while Max is more than both, others keep slots.
//   - Only a connection idle between requests is closed to make room, never one whose request is being read or
//     answered.
//
// Caveats:
//   - A request that arrives on an idle connection as it is closed is lost, as when the server's idle timeout
//     closes it; clients retry on a new connection.

package server

import (
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
)

// ConnLimits bounds a LimitedListener's connections.
type ConnLimits struct {
	Max     int // connections open at once, at least 1
	PerPeer int // connections from one address at once; 0, or Max or more, bounds them by Max alone
	// Trusted tells the addresses that may hold more than Untrusted connections together; nil trusts every one.
	Trusted   func(netip.Addr) bool
	Untrusted int // connections from the addresses Trusted refuses, together
}

// LimitedListener is a net.Listener within ConnLimits' bounds.
type LimitedListener struct {
	net.Listener
	cfg ConnLimits

	mu        sync.Mutex
	slot      *sync.Cond // signalled when a connection closes or becomes idle
	closed    bool
	open      int
	untrusted int
	peers     map[netip.Addr]int
	idle      map[*conn]uint64 // idle connections, by when they became so
	seq       uint64

	refused, evicted atomic.Int64
}

// LimitConns returns l within cfg's bounds.
func LimitConns(l net.Listener, cfg ConnLimits) *LimitedListener {
	if cfg.Max < 1 {
		cfg.Max = 1
	}
	if cfg.PerPeer >= cfg.Max {
		cfg.PerPeer = 0 // a peer at Max waits, as any connection past Max does
	}
	ln := &LimitedListener{Listener: l, cfg: cfg, peers: map[netip.Addr]int{}, idle: map[*conn]uint64{}}
	ln.slot = sync.NewCond(&ln.mu)
	return ln
}

// Accept returns the next connection within the bounds; those refused are closed as they come.
func (l *LimitedListener) Accept() (net.Conn, error) {
	for {
		raw, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if c := l.admit(raw); c != nil {
			return c, nil
		}
	}
}

// Close closes the listener; an Accept waiting for a slot returns.
func (l *LimitedListener) Close() error {
	l.mu.Lock()
	l.closed = true
	l.slot.Broadcast()
	l.mu.Unlock()
	return l.Listener.Close()
}

// Refused is the number of connections closed as they came, past PerPeer or Untrusted with none idle to close.
func (l *LimitedListener) Refused() int64 { return l.refused.Load() }

// Evicted is the number of idle connections closed to make room.
func (l *LimitedListener) Evicted() int64 { return l.evicted.Load() }

// ConnState is the server's ConnState hook: it tells the LimitedListener which connections are idle.
func (l *LimitedListener) ConnState(nc net.Conn, s http.ConnState) {
	c := ours(nc)
	if c == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch s {
	case http.StateIdle:
		if !c.released {
			l.seq++
			l.idle[c] = l.seq
			l.slot.Broadcast()
		}
	case http.StateNew, http.StateActive:
		delete(l.idle, c)
	case http.StateHijacked, http.StateClosed:
		l.release(c)
	}
}

// ours is the LimitedListener's connection under nc, which may be a *tls.Conn over it.
func ours(nc net.Conn) *conn {
	for {
		if c, ok := nc.(*conn); ok {
			return c
		}
		u, ok := nc.(interface{ NetConn() net.Conn })
		if !ok {
			return nil
		}
		nc = u.NetConn()
	}
}

func (l *LimitedListener) admit(raw net.Conn) net.Conn {
	peer := addrOf(raw)
	trusted := l.cfg.Trusted == nil || l.cfg.Trusted(peer)
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		switch {
		case l.closed:
			_ = raw.Close()
			return nil
		case l.cfg.PerPeer > 0 && l.peers[peer] >= l.cfg.PerPeer:
			if !l.evictOldest(func(c *conn) bool { return c.peer == peer }) {
				l.refuse(raw)
				return nil
			}
		case !trusted && l.untrusted >= l.cfg.Untrusted:
			if !l.evictOldest(func(c *conn) bool { return !c.trusted }) {
				l.refuse(raw)
				return nil
			}
		case l.open >= l.cfg.Max:
			if !l.evictOldest(func(*conn) bool { return true }) {
				l.slot.Wait()
			}
		default:
			c := &conn{Conn: raw, l: l, peer: peer, trusted: trusted}
			l.open++
			l.peers[peer]++
			if !trusted {
				l.untrusted++
			}
			return c
		}
	}
}

func (l *LimitedListener) refuse(raw net.Conn) {
	l.refused.Add(1)
	_ = raw.Close()
}

// evictOldest closes the connection idle the longest among those of which, if any. l.mu is held.
func (l *LimitedListener) evictOldest(of func(*conn) bool) bool {
	var oldest *conn
	var at uint64
	for c, seq := range l.idle {
		if of(c) && (oldest == nil || seq < at) {
			oldest, at = c, seq
		}
	}
	if oldest == nil {
		return false
	}
	l.release(oldest)
	l.evicted.Add(1)
	_ = oldest.Conn.Close() // the server's read fails, and it closes the connection
	return true
}

// release frees the connection's slot once. l.mu is held.
func (l *LimitedListener) release(c *conn) {
	if c.released {
		return
	}
	c.released = true
	delete(l.idle, c)
	l.open--
	if l.peers[c.peer]--; l.peers[c.peer] <= 0 {
		delete(l.peers, c.peer)
	}
	if !c.trusted {
		l.untrusted--
	}
	l.slot.Broadcast()
}

type conn struct {
	net.Conn
	l        *LimitedListener
	peer     netip.Addr
	trusted  bool
	released bool // guarded by l.mu
}

func (c *conn) Close() error {
	c.l.mu.Lock()
	c.l.release(c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

func addrOf(c net.Conn) netip.Addr {
	if ap, err := netip.ParseAddrPort(c.RemoteAddr().String()); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}
