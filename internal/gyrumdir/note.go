package gyrumdir

import (
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"
)

// NoteFile holds the agent's latest note (Note) as JSON: gyrum note
// writes it, the loop sends it with its next heartbeat (warp keeps it as
// the attempt's last note), and issue 44's progress reads it as evidence.
const NoteFile = "note.json"

// MaxNoteLen bounds a note's text: 1 KiB, as warp does.
const MaxNoteLen = 1024

// Note is the content of note.json: what the agent tried and what it
// plans, and when it wrote that.
type Note struct {
	Text string    `json:"text"`
	At   time.Time `json:"at"`
}

// Validate reports why n cannot be sent: empty, longer than MaxNoteLen,
// not UTF-8, or holding a NUL.
func (n Note) Validate() error {
	switch {
	case n.Text == "":
		return fmt.Errorf("the note is empty: say what you tried and what you plan")
	case len(n.Text) > MaxNoteLen:
		return fmt.Errorf("the note is %d bytes, at most %d allowed: keep it to what the next agent needs", len(n.Text), MaxNoteLen)
	case !utf8.ValidString(n.Text):
		return fmt.Errorf("the note is not valid UTF-8")
	case n.At.IsZero():
		return fmt.Errorf("the note has no time")
	}
	for i := 0; i < len(n.Text); i++ {
		if n.Text[i] == 0 {
			return fmt.Errorf("the note contains a NUL character at byte %d", i)
		}
	}
	return nil
}

// WriteNote validates n and writes note.json atomically.
func (d Dir) WriteNote(n Note) error {
	if err := n.Validate(); err != nil {
		return err
	}
	data, err := json.Marshal(n)
	if err != nil {
		return fmt.Errorf("encode note: %w", err)
	}
	return WriteFileAtomic(d.file(NoteFile), append(data, '\n'))
}

// ReadNote reads note.json. Missing wraps fs.ErrNotExist, unusable
// content wraps ErrCorrupt.
func (d Dir) ReadNote() (Note, error) {
	p := d.file(NoteFile)
	data, err := readSmall(p, maxSmallFile)
	if err != nil {
		return Note{}, err
	}
	var n Note
	if err := json.Unmarshal(data, &n); err != nil {
		return Note{}, fmt.Errorf("%w: %s: %v", ErrCorrupt, p, err)
	}
	if err := n.Validate(); err != nil {
		return Note{}, fmt.Errorf("%w: %s: %v", ErrCorrupt, p, err)
	}
	return n, nil
}
