//go:build !race

package lambdafn_test

const raceDetector = false
