// Package flood opens many connections to a server under attack, each from a loopback address of the attacker's
// choosing, and holds them until told to stop.
package flood

import (
	"io"
	"net"
	"sync"
	"time"
)

// Dial connects to addr from the address from; nil if it cannot within 2 s.
func Dial(from, addr string) net.Conn {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 2 * time.Second}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		return nil
	}
	return conn
}

// Many runs n copies of f from the address from, each on a connection of its own, and returns once each has
// started its attack, or after wait. stop closes every connection.
func Many(from, addr string, n int, wait time.Duration, f func(net.Conn)) (stop func()) {
	var mu sync.Mutex
	var conns []net.Conn
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			conn := Dial(from, addr)
			if conn == nil {
				return // past the server's cap or the kernel's backlog: the attacker holds nothing of the server's
			}
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
			f(conn)
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(wait):
	}
	return func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	}
}

// Trickle writes next on conn once a second, in a goroutine of its own, until stopped is closed or a write fails:
// a client that is always just about to finish its request.
func Trickle(conn net.Conn, next string, stopped <-chan struct{}) {
	go func() {
		for {
			select {
			case <-stopped:
				return
			case <-time.After(time.Second):
				if _, err := io.WriteString(conn, next); err != nil {
					return
				}
			}
		}
	}()
}
