package flood

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestManyHoldsEveryConnectionFromTheAttackersAddressUntilStopped(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	accepted := make(chan net.Conn, 10)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	stop := Many("127.0.0.2", ln.Addr().String(), 10, 5*time.Second, func(net.Conn) {})
	var held []net.Conn
	for range 10 {
		c := <-accepted
		defer c.Close()
		assert.Equal(t, "127.0.0.2", c.RemoteAddr().(*net.TCPAddr).IP.String())
		held = append(held, c)
	}
	stop()
	for _, c := range held {
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		_, err = c.Read(make([]byte, 1))
		assert.Error(t, err, "the attacker's connection is closed")
		assert.False(t, errors.Is(err, os.ErrDeadlineExceeded), "the attacker's connection is closed")
	}
}
