package editorconf

// colibri's own entry in an editor's file: never imported (import --apply
// writes it, internal/editorconf/rewrite).

import "slices"

// ColibriEntry is the name of colibri's own entry in the editor's file.
const ColibriEntry = "colibri"

// TakeColibri removes colibri's own entry (the one named ColibriEntry) from
// r: a second import --apply must not host colibri inside colibri. It
// returns that entry (nil when there is none), so that the new one keeps
// what the user set on it.
func (r *Result) TakeColibri() *Entry {
	i := slices.IndexFunc(r.Entries, func(e *Entry) bool { return e.EditorName == ColibriEntry })
	if i < 0 {
		return nil
	}
	own := r.Entries[i]
	r.Entries = slices.Delete(r.Entries, i, i+1)
	r.Moved = slices.DeleteFunc(r.Moved, func(m Moved) bool { return m.Server == own.Name })
	r.Notes = slices.DeleteFunc(r.Notes, func(n Note) bool { return n.Server == own.Name })
	r.Notes = append(r.Notes, Note{Server: own.EditorName, Message: "colibri's own entry: not imported (--apply replaces it, keeping its other arguments)"})
	return own
}
