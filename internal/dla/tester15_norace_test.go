//go:build !race

package dla

// t15Race: see tester15_race_test.go.
const t15Race = false
