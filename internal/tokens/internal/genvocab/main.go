// Command genvocab writes cl100k_base's vocabulary, as the tiktoken-go
// library holds it, in the form package tokens embeds: for each rank from 0
// up, one byte of length and the token's bytes. go generate in
// internal/tokens runs it; TestVocabularyIsTheLibrarys checks the file.
package main

import (
	"fmt"
	"os"

	"github.com/tiktoken-go/tokenizer/codec"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: genvocab OUTPUT")
		os.Exit(2)
	}
	out, err := encode(codec.NewCl100kBase())
	if err == nil {
		err = os.WriteFile(os.Args[1], out, 0o644)
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

func encode(c *codec.Codec) ([]byte, error) {
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
