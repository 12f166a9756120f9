// Package serverproc runs a built server binary for the measuring tools under test/: it starts the process,
// learns the address the process logs on its standard error, and reads the process's memory from /proc.
package serverproc

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Server is a started process and the address it logged.
type Server struct {
	Cmd  *exec.Cmd
	Addr string
	done chan struct{}
}

// Command is the command that runs the binary at path, made absolute, with args. Where the system allows it, the
// process is killed if this one dies first, so that a run never leaves a process behind.
func Command(path string, args ...string) (*exec.Cmd, error) {
	bin, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = sysProcAttr()
	return cmd, nil
}

// LimitMemory sets GOMEMLIMIT to limit, as a Deployment sets it to its container's memory limit.
func LimitMemory(cmd *exec.Cmd, limit int64) {
	cmd.Env = append(os.Environ(), "GOMEMLIMIT="+strconv.FormatInt(limit, 10))
}

// Start starts cmd and returns once a JSON line on its standard error whose "msg" is msg names its "addr", within
// 15 s. The rest of the standard error is drained, as a log collector would.
func Start(cmd *exec.Cmd, msg string) (*Server, error) {
	bin := cmd.Path
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &Server{Cmd: cmd, done: make(chan struct{})}
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == msg {
				addrc <- line.Addr
				break
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		_ = cmd.Wait()
		close(s.done)
	}()
	select {
	case s.Addr = <-addrc:
		return s, nil
	case <-s.done:
		return nil, fmt.Errorf("%s exited before serving", bin)
	case <-time.After(15 * time.Second):
		s.Kill()
		return nil, fmt.Errorf("%s did not report its address within 15s", bin)
	}
}

// Done is closed once the process has exited.
func (s *Server) Done() <-chan struct{} { return s.done }

// Kill kills the process and waits for it to exit.
func (s *Server) Kill() {
	_ = s.Cmd.Process.Kill()
	<-s.done
}

// Memory is the process's resident set size (VmRSS) and its peak (VmHWM), in bytes; zero where it cannot be read.
func (s *Server) Memory() (rss, peak int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.Cmd.Process.Pid))
	if err != nil {
		return 0, 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		field, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			continue
		}
		switch field {
		case "VmRSS":
			rss = kb << 10
		case "VmHWM":
			peak = kb << 10
		}
	}
	return rss, peak
}

// Peak is the process's peak resident set size (VmHWM), in bytes; zero where it cannot be read.
func (s *Server) Peak() int64 {
	_, peak := s.Memory()
	return peak
}
