// Command genvocab writes cl100k_base's vocabulary, as the tiktoken-go
// library holds it, in the two files package tokens embeds: the tokens
// (for each rank from 0 up, one byte of length and the token's bytes) and
// their index (the offset of each rank's token, then a hash table from
// tokens to ranks). go generate in internal/tokens runs it;
// TestVocabularyIsTheLibrarys checks both files.
package main

import (
	"encoding/binary"
	"fmt"
	"os"

	"github.com/tiktoken-go/tokenizer/codec"

	"github.com/pipeline-dev/pipeline/internal/tokens/internal/vocabindex"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: genvocab TOKENS INDEX")
		os.Exit(2)
	}
	tokens, err := vocabulary(codec.NewCl100kBase())
	if err == nil {
		err = os.WriteFile(os.Args[1], tokens, 0o644)
	}
	if err == nil {
		err = os.WriteFile(os.Args[2], index(tokens), 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "genvocab:", err)
		os.Exit(1)
	}
}

// ranks is cl100k_base's count of ordinary tokens; its special tokens
// (<|endoftext|> and the like) are counted as plain text, so they are left
// out.
const ranks = 100256

func vocabulary(c *codec.Codec) ([]byte, error) {
	var out []byte
	for rank := range uint(ranks) {
		token, err := c.Decode([]uint{rank})
		if err != nil {
			return nil, fmt.Errorf("rank %d: %w", rank, err)
		}
		if len(token) == 0 || len(token) > 255 {
			return nil, fmt.Errorf("rank %d: token of %d bytes", rank, len(token))
		}
		out = append(out, byte(len(token)))
		out = append(out, token...)
	}
	if _, err := c.Decode([]uint{ranks}); err == nil {
		return nil, fmt.Errorf("rank %d is an ordinary token: the vocabulary grew", ranks)
	}
	return out, nil
}

// index is the offset of each rank's token in tokens, then the hash
// table: vocabindex.Slots slots, each 0 or a rank plus one, a token at the
// first free slot from its hash on.
func index(tokens []byte) []byte {
	var offsets []uint32
	slots := make([]uint32, vocabindex.Slots)
	for i := 0; i < len(tokens); {
		n := int(tokens[i])
		rank := uint32(len(offsets))
		offsets = append(offsets, uint32(i))
		s := vocabindex.Hash(string(tokens[i+1 : i+1+n]))
		for slots[s] != 0 {
			s = (s + 1) % vocabindex.Slots
		}
		slots[s] = rank + 1
		i += 1 + n
	}
	out := make([]byte, 0, 4*(len(offsets)+len(slots)))
	for _, v := range append(offsets, slots...) {
		out = binary.LittleEndian.AppendUint32(out, v)
	}
	return out
}
