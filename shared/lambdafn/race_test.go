//go:build race

package lambdafn_test

// raceDetector: the race detector makes each request some ten times
// dearer, so the tests that count by the hundred thousand count less.
const raceDetector = true
