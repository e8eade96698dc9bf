// Package docstest checks the repository's documentation against itself:
// every relative link of README.md and docs/ names a file that exists and,
// with a #fragment, a heading of that file. Links are checked the way
// GitHub renders them, so a moved section or a renamed file fails here
// before a reader finds it.
package docstest
