package doctor

// ManagedSettingsFiles returns where Claude Code reads the administrator's
// settings on macOS.
func ManagedSettingsFiles() []string {
	return []string{"/Library/Application Support/ClaudeCode/managed-settings.json"}
}
