package main

import "syscall"

// sysProcAttr kills the server if the load generator dies first, so that a
// run never leaves a process behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
