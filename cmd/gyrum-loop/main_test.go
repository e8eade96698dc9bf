package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	ok := []struct {
		args   []string
		dir    string
		schema int
	}{
		{[]string{"heartbeat", "run", "--dir", "/w/t"}, "/w/t", 2},
		{[]string{"heartbeat", "run", "--dir=/w/t", "--schema-version=1"}, "/w/t", 1},
		{[]string{"heartbeat", "run", "--dir", "/w/t", "--schema-version", "2"}, "/w/t", 2},
	}
	for _, c := range ok {
		dir, schema, err := parse(c.args)
		if err != nil || dir != c.dir || schema != c.schema {
			t.Errorf("parse(%q) = %q, %d, %v; want %q, %d", c.args, dir, schema, err, c.dir, c.schema)
		}
	}
	bad := map[string][]string{
		"--dir is required":      {"heartbeat", "run"},
		"want 1 or 2":            {"heartbeat", "run", "--dir", "/w", "--schema-version", "3"},
		"needs a value":          {"heartbeat", "run", "--dir"},
		"unknown flag --verbose": {"heartbeat", "run", "--dir", "/w", "--verbose"},
		"want the words":         {"heartbeat", "status", "--dir", "/w"},
	}
	for want, args := range bad {
		if _, _, err := parse(args); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parse(%q): got %v, want an error saying %q", args, err, want)
		}
	}
}

func TestRunExitCodes(t *testing.T) {
	var stderr bytes.Buffer
	if code := run([]string{"--help"}, &stderr, func(string) string { return "" }); code != 0 || !strings.Contains(stderr.String(), "usage: gyrum-loop heartbeat run") {
		t.Errorf("--help: exit %d, %q", code, stderr.String())
	}
	stderr.Reset()
	if code := run([]string{"heartbeat", "run"}, &stderr, func(string) string { return "" }); code != 2 || !strings.Contains(stderr.String(), "--dir is required") {
		t.Errorf("no --dir: exit %d, %q", code, stderr.String())
	}
	stderr.Reset()
	empty := t.TempDir()
	if code := run([]string{"heartbeat", "run", "--dir", empty}, &stderr, func(string) string { return "" }); code != 2 || !strings.Contains(stderr.String(), "was start-work run there?") {
		t.Errorf("a directory without .gyrum: exit %d, %q", code, stderr.String())
	}
}
