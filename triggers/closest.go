package triggers

// closestLongest is the longest word Closest looks at: a typo is in a
// name, and the edit distance costs the product of the two lengths.
const closestLongest = 64

// Closest returns the candidate nearest to word by edit distance, or "" when
// none is near enough to be a likely typo.
func Closest(word string, candidates []string) string {
	best, bestDistance := "", len(word)/3+2
	if len(word) > closestLongest {
		return ""
	}
	for _, c := range candidates {
		// The distance is at least the difference of the lengths.
		if len(c) > closestLongest || abs(len(c)-len(word)) >= bestDistance {
			continue
		}
		if d := editDistance(word, c); d < bestDistance {
			best, bestDistance = c, d
		}
	}
	return best
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
