package wacz

// SetBlockLines sets the compressed index's lines a block, for a test
// of several blocks, and returns what puts it back.
func SetBlockLines(n int) func() {
	was := blockLines
	blockLines = n
	return func() { blockLines = was }
}
