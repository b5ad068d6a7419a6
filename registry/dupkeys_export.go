package registry

import "encoding/json"

// DuplicateKeys finds the member names that appear twice in one object of
// the JSON document data (nil for a document that is not valid JSON): the
// registry refuses them, and so does `import` in an editor's file, since
// editors differ on which of the two they keep.
func DuplicateKeys(data []byte) []Problem {
	if !json.Valid(data) {
		return nil
	}
	return duplicateKeys(data)
}
