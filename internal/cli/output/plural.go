package output

import (
	"strconv"
	"strings"
)

// Plural counts in words: "1 match", "2 matches", "1 object", "0 objects",
// "3 entries". Only regular English plurals are formed.
func Plural(n int, word string) string {
	s := strconv.Itoa(n) + " "
	if n == 1 {
		return s + word
	}
	switch {
	case strings.HasSuffix(word, "y") && len(word) > 1 && !strings.ContainsRune("aeiou", rune(word[len(word)-2])):
		return s + word[:len(word)-1] + "ies"
	case strings.HasSuffix(word, "ch"), strings.HasSuffix(word, "sh"), strings.HasSuffix(word, "s"),
		strings.HasSuffix(word, "x"), strings.HasSuffix(word, "z"):
		return s + word + "es"
	}
	return s + word + "s"
}

// Agree picks the word that agrees with a count of n: one for 1, many
// otherwise ("1 message belongs", "2 messages belong"; "naming it", "naming
// them"). Plural counts the noun; Agree gives the verb or pronoun after it.
func Agree(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
