package cluster

import "syscall"

// sysProcAttr kills a process the tests start (the control plane's, or a controller a test
// runs beside it) when the test binary dies without stopping it (a panic or a go test
// timeout), so none outlives its test.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
