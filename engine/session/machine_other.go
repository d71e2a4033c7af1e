//go:build !linux

package session

import (
	"os"
	"strings"
)

// machineID names this machine: a process group recorded on another one
// is not here. Without a boot id, a reboot is not told apart.
func machineID() string {
	host, err := os.Hostname()
	if err != nil {
		return ""
	}
	return strings.Join(strings.Fields(host), "-")
}
