//go:build race

package main

// raceEnabled: the tests run with -race, so zklock is built with it too.
const raceEnabled = true
