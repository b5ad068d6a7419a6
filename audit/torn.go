package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
)

// TornWrite is a line a colibri began writing and did not finish (killed
// mid-write, a full disk): the fragment's length and its digest, as a
// line's successor would name it (LineDigest, keyed when the chain is).
// The first line written after it carries it in "torn", so that verify
// tells a torn write from an edit: the fragment is ended with a newline
// and left out of every chain, which continues from the last whole line.
type TornWrite struct {
	Bytes  int    `json:"bytes"`
	Digest string `json:"digest"`
}

// maxTorn bounds the torn writes one line records: a disk that stays full
// tears at most one line per record, and each is recorded only until a
// line is written whole.
const maxTorn = 16

// tornTail reads the end of f, the audit log just opened for appending:
// a file that does not end with a newline ends in a torn write (colibri's
// lines end with one, written with the line in one write(2)). needNL
// says the next line must begin with a newline that ends it; frag is the
// fragment to record, or nil when the last line is whole and only its
// newline was lost (it is in its chain already) or when it cannot be
// read back (a file longer than a line allows; verify refuses it anyway).
// A file that cannot be read (opened write-only) is not judged.
func tornTail(f *os.File, key []byte) (needNL bool, frag *TornWrite) {
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return false, nil
	}
	size := st.Size()
	var last [1]byte
	if _, err := f.ReadAt(last[:], size-1); err != nil || last[0] == '\n' {
		return false, nil
	}
	n := min(size, MaxLine+1)
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, size-n); err != nil {
		return true, nil
	}
	if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
		buf = buf[i+1:]
	} else if n < size {
		return true, nil
	}
	if json.Valid(buf) {
		return true, nil
	}
	return true, &TornWrite{Bytes: len(buf), Digest: LineDigest(key, buf)}
}

// checkTail reads the end of the file before a line is written: several
// colibri may append to one log, and since this one last wrote it may
// have come to end in another's torn write, which this line must end with
// a newline and record (as at open) rather than be glued to; and a torn
// write of this one's that another's line ended since was recorded by
// that line. A file that cannot be read back (opened write-only) is not
// judged.
func (w *Writer) checkTail() {
	w.size = 0
	st, err := w.f.Stat()
	if err != nil || st.Size() == 0 {
		return
	}
	w.size = st.Size()
	if w.size == w.end {
		return // nobody wrote since this one's last whole line
	}
	var last [1]byte
	if _, err := w.f.ReadAt(last[:], st.Size()-1); err != nil {
		return
	}
	if last[0] == '\n' {
		if w.needNL {
			w.needNL, w.torn = false, nil
		}
		return
	}
	if w.needNL {
		return // this one's own torn write, recorded already
	}
	w.needNL = true
	if _, frag := tornTail(w.f, w.opts.Key); frag != nil {
		w.addTorn(*frag)
	}
}

// tore records what a failed write of line (after pre bytes of newline)
// left in the file when n bytes of it went out.
func (w *Writer) tore(n, pre int, line []byte) {
	if n <= 0 {
		return // nothing written: the file is as it was
	}
	w.needNL = false
	switch got := n - pre; {
	case got <= 0:
		// Only the newline that ended an earlier fragment.
	case got >= len(line):
		// The line whole (its own newline lost, unless got says it went
		// too): it is in the chain, and the torn writes it recorded are
		// recorded.
		w.chain.wrote(line)
		w.needNL, w.torn = got == len(line), nil
	default:
		w.needNL = true
		w.addTorn(TornWrite{Bytes: got, Digest: LineDigest(w.opts.Key, line[:got])})
	}
}

func (w *Writer) addTorn(t TornWrite) {
	if len(w.torn) == maxTorn {
		w.torn = append(w.torn[:0:0], w.torn[1:]...)
	}
	w.torn = append(w.torn, t)
}

// tornNote is a torn write verify found, as the report says it.
func tornNote(file string, line, bytes int, ended string) string {
	return fmt.Sprintf("%s line %d (%d bytes, %s)", file, line, bytes, ended)
}
