//go:build !linux

package serverproc

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return nil }
