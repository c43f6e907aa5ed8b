//go:build linux

package render

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// netnsAttr starts a process in a new network namespace, in which no
// interface is up: as root a network namespace alone, otherwise inside a
// user namespace that maps the caller's own user and group. The process is
// killed when the worker dies.
func netnsAttr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Cloneflags: syscall.CLONE_NEWNET}
	if uid := os.Getuid(); uid != 0 {
		gid := os.Getgid()
		a.Cloneflags |= syscall.CLONE_NEWUSER
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		a.GidMappingsEnableSetgroups = false
	}
	return a
}

// flagsAttr is chromedp's own: the browser is killed when the worker dies.
func flagsAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// probeNetns starts the browser once in a network namespace, asking only
// its version, to learn whether the machine allows one.
func probeNetns(execPath string) error {
	cmd := exec.Command(execPath, "--version")
	cmd.SysProcAttr = netnsAttr()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("render: the browser cannot start in a network namespace of its own (%w; %.200s): "+
			"run the worker as root, allow unprivileged user namespaces, or give --render-isolation flags", err, out)
	}
	return nil
}

// kill ends the processes at once, children first, so that none is left
// to a parent that would restart it.
func kill(procs []int) {
	for i := len(procs) - 1; i >= 0; i-- {
		syscall.Kill(procs[i], syscall.SIGKILL)
	}
}
