package main

import "fmt"

// version is the release this source is, so that plain go build and go install report it; test/release keeps it
// equal to the VERSION file. The Makefile and the Dockerfile also set it with -ldflags "-X main.version=...",
// which lets a build name another version.
var version = "0.1.0"

var versionCommand = command{
	name: "version", summary: "print the version",
	about: "Prints the version llmbudget was built as.",
	run: func(args []string, std stdio) error {
		fs := newFlagSet("version")
		if err := parseFlags(fs, args); err != nil {
			return err
		}
		if fs.NArg() > 0 {
			return badUsage(fs, "unexpected argument %q", fs.Arg(0))
		}
		_, err := fmt.Fprintf(std.out, "llmbudget %s\n", version)
		return err
	},
}
