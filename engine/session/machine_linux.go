package session

import (
	"os"
	"strings"
)

// machineID names this machine and boot: a process group recorded under
// another one is not here.
func machineID() string {
	id, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(id))
}
