// Package docexamples holds the test that runs every command example of
// README.md and docs/ as written, through a real shell, against the built
// binary. It has no API.
package docexamples
