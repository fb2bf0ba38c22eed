package slurm

import (
	"errors"
	"fmt"
	"strconv"
)

// ErrInvalid is the sentinel every *Error unwraps to.
var ErrInvalid = errors.New("slurm: invalid configuration")

// Error is a problem that stops an import: where it is (file name as given,
// 1-based line; 0 when the problem is not on one line), which setting (Key,
// as written in the file; may be empty) and what is wrong.
type Error struct {
	File string
	Line int
	Key  string
	Msg  string
}

// Error returns "FILE:LINE: KEY: MSG", leaving out the parts that are empty.
func (e *Error) Error() string { return where(e.File, e.Line, e.Key) + e.Msg }

// Unwrap returns ErrInvalid.
func (e *Error) Unwrap() error { return ErrInvalid }

// Warning is a setting the importer read but does not model, or does not
// know at all; the import goes on without it.
type Warning struct {
	File string
	Line int
	Key  string
	Msg  string
}

// String returns "FILE:LINE: KEY: MSG", as Error does.
func (w Warning) String() string { return where(w.File, w.Line, w.Key) + w.Msg }

func where(file string, line int, key string) string {
	s := file
	if s == "" {
		s = "line"
	}
	if line > 0 {
		s += ":" + strconv.Itoa(line)
	}
	s += ": "
	if key != "" {
		s += key + ": "
	}
	return s
}

func errAt(file string, line int, key, format string, args ...any) error {
	return &Error{File: file, Line: line, Key: key, Msg: fmt.Sprintf(format, args...)}
}

// warnings collects Warnings in the order they are found.
type warnings []Warning

func (w *warnings) add(file string, line int, key, format string, args ...any) {
	*w = append(*w, Warning{File: file, Line: line, Key: key, Msg: fmt.Sprintf(format, args...)})
}
