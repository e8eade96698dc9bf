package doctor

// ManagedSettingsFiles returns where Claude Code reads the administrator's
// settings on Linux.
func ManagedSettingsFiles() []string {
	return []string{"/etc/claude-code/managed-settings.json"}
}
