// Package tmpfs gives a test a small file system of its own, so a full disk
// is a real ENOSPC from the kernel rather than an imitation.
package tmpfs

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// Mount mounts a tmpfs of size bytes on a new temporary directory and
// unmounts it when the test ends. It needs root (CI runs as root); where
// mounting is not allowed the test is skipped, and with
// CRAWLER_REQUIRE_TMPFS=1 (set by .ci/run) it fails, so a full-disk test
// never silently stops running in CI.
func Mount(t testing.TB, size int) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d,mode=0755", size), "tmpfs", dir).CombinedOutput()
	if err != nil {
		msg := fmt.Sprintf("cannot mount a tmpfs for a full-disk test (needs root): %v: %s", err, out)
		if os.Getenv("CRAWLER_REQUIRE_TMPFS") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}
