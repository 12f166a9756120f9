package cluster

import "syscall"

// sysProcAttr kills a control plane process when the test binary dies without calling
// Stop (a panic or a go test timeout), so no etcd or API server outlives its test.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
