// Package vocabindex is the shape of the hash table from tokens to ranks
// that package tokens embeds and its generator writes: a table laid out
// when the vocabulary is generated, where a map built at the first count
// cost every counting process 12-20 ms and 3.5 MB.
package vocabindex

// Slots is the size of the table, a power of two: cl100k_base's 100,256
// tokens fill 38 % of it, so that a token that is not in the vocabulary
// (most of what byte-pair merging asks) is found absent in about two
// probes.
const Slots = 1 << 18

// Hash is the slot a token's search starts at: FNV-1a, folded to Slots.
func Hash(token string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(token); i++ {
		h ^= uint32(token[i])
		h *= 16777619
	}
	return (h ^ h>>18) % Slots
}
