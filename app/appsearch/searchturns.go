package appsearch

// placeInTurns names the turn and the tool call of each transcript hit,
// from the place the index found for its line when it indexed it
// (search.Hit.Place): a search renders no transcript.
func placeInTurns(hits []Hit) {
	for i := range hits {
		if p := hits[i].Hit.Place; p.Line > 0 {
			hits[i].Turn, hits[i].Call, hits[i].Tool = p.Turn, p.Call, p.Tool
		}
	}
}
