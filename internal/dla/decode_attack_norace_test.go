//go:build !race

package dla

// raceDetector: see decode_attack_race_test.go.
const raceDetector = false
