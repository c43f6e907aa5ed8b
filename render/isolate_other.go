//go:build !linux

package render

import (
	"errors"
	"os"
	"syscall"
)

func netnsAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
func flagsAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

func probeNetns(string) error {
	return errors.New("render: a network namespace for the browser needs Linux: give --render-isolation flags")
}

// kill ends the processes at once.
func kill(procs []int) {
	for _, pid := range procs {
		if p, err := os.FindProcess(pid); err == nil {
			p.Kill()
		}
	}
}
