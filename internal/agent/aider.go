package agent

// aider is a Python entry point (`aider`, or `python -m aider`). It has no
// tool hooks: it is watched, and its work shows as its processes' CPU.
var aider = Agent{
	Name:        "aider",
	Product:     "aider",
	Title:       "Aider",
	Executables: []string{"aider"},
	Packages:    []string{"/aider/"},
}
