//go:build !linux

package cluster

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return nil }
