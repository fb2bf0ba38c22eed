package snapshot

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/gpusched/gpusched/topology"
)

// The seal (version 8). Encode ends a file with one trailer line, a YAML
// comment that every YAML reader skips:
//
//	# sealed: bytes=48213 crc32c=5f0e3a91 jobs=120 health=2 nominations=1
//
// bytes is the length of everything before the line (the content),
// crc32c the CRC-32C (Castagnoli) of it, in eight lower-case hex digits,
// and then the length of every list of the State that is not empty, by
// its YAML key, in the State's field order. Decode checks the trailer
// before it decodes anything: a file cut short (a partial copy, a full
// disk, a torn write), extended or edited is refused with an error that
// wraps ErrNotWhole and says what is wrong; the counts are checked again
// against the decoded lists, and State.Hosts against the cluster Load
// builds. A file that says version 8 or later and has no trailer is cut
// short. Files of versions 1 to 7 have none, and load as before (a
// hand-written file without a version too).
//
// A list added to State is counted without a change here: the counts are
// every slice-typed field of State (sealCounted).

// ErrNotWhole is wrapped by the error for a state file that is not the
// whole file its writer wrote: its trailer is missing or malformed, its
// length or checksum is not the trailer's, or a list does not hold as
// many items as the trailer counted.
var ErrNotWhole = errors.New("not the whole state file")

// sealedSince is the first version whose files end with a trailer.
const sealedSince = 8

// hostsOf counts the hosts of c that were not removed (State.Hosts).
func hostsOf(c *topology.Cluster) int {
	n := 0
	for h := range c.NumHosts() {
		if !c.Removed(topology.HostID(h)) {
			n++
		}
	}
	return n
}

// versionLine finds a YAML state file's version line.
var versionLine = regexp.MustCompile(`(?m)^version: *([0-9]{1,9}) *\r?$`)

// versionWithin is how far into a file its version line is looked for
// (Encode writes it first, after the comment).
const versionWithin = 64 << 10

// missingTrailer is the error for a file of version v without a trailer.
func missingTrailer(v int) error {
	return fmt.Errorf("%w: a version %d file ends with a trailer (# sealed: …), and this one has none: it was cut short", ErrNotWhole, v)
}

// sealPrefix starts the trailer line.
const sealPrefix = "# sealed: "

// castagnoli is the CRC-32C table.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// seal is what a state file's trailer says of its content (version 8).
type seal struct {
	// Bytes is the length of the content (the file before the trailer).
	Bytes int64
	// CRC32C is the CRC-32C of the content.
	CRC32C uint32
	// Counts are the lengths of the State's non-empty lists, by YAML key,
	// in field order.
	Counts []count
}

// count is the length of one list of a State.
type count struct {
	List string // its YAML key, e.g. "jobs"
	N    int
}

// line writes the seal as its trailer line, with the newline.
func (s *seal) line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%sbytes=%d crc32c=%08x", sealPrefix, s.Bytes, s.CRC32C)
	for _, c := range s.Counts {
		fmt.Fprintf(&b, " %s=%d", c.List, c.N)
	}
	b.WriteByte('\n')
	return b.String()
}

// listFields are the indexes and YAML keys of State's slice fields.
var listFields = func() (out []struct {
	index int
	key   string
}) {
	t := reflect.TypeFor[State]()
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Type.Kind() != reflect.Slice || !f.IsExported() {
			continue
		}
		key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if key == "" || key == "-" {
			continue
		}
		out = append(out, struct {
			index int
			key   string
		}{i, key})
	}
	return out
}()

// sealCounted returns the lengths of st's non-empty lists.
func sealCounted(st *State) []count {
	v := reflect.ValueOf(st).Elem()
	var out []count
	for _, f := range listFields {
		if n := v.Field(f.index).Len(); n > 0 {
			out = append(out, count{List: f.key, N: n})
		}
	}
	return out
}

// checkCounts reports the first list of st whose length is not the
// seal's.
func (s *seal) checkCounts(st *State) error {
	got := sealCounted(st)
	want := make(map[string]int, len(s.Counts))
	for _, c := range s.Counts {
		want[c.List] = c.N
	}
	for _, c := range got {
		if want[c.List] != c.N {
			return fmt.Errorf("%w: %s: the file holds %d, its trailer counts %d", ErrNotWhole, c.List, c.N, want[c.List])
		}
		delete(want, c.List)
	}
	for _, c := range s.Counts {
		if _, left := want[c.List]; left {
			return fmt.Errorf("%w: %s: the file holds none, its trailer counts %d", ErrNotWhole, c.List, c.N)
		}
	}
	return nil
}

// unseal splits data into its content and its seal, checked: the seal is
// nil when data has no trailer. An error wraps ErrNotWhole.
func unseal(data []byte) ([]byte, *seal, error) {
	start := 0
	if n := len(data); n > 0 {
		start = bytes.LastIndexByte(data[:n-1], '\n') + 1
	}
	last := data[start:]
	if !bytes.HasPrefix(last, []byte(sealPrefix)) {
		// No trailer: the version says whether it needs one (read here
		// from a YAML file's version line, before a torn file's YAML
		// fails to parse; Decode checks the decoded version too).
		if m := versionLine.FindSubmatch(data[:min(len(data), versionWithin)]); m != nil {
			if v, err := strconv.Atoi(string(m[1])); err == nil && v >= sealedSince && v <= Version {
				if err := afterTrailer(data); err != nil {
					return nil, nil, err
				}
				return nil, nil, missingTrailer(v)
			}
		}
		return data, nil, nil
	}
	s, err := parseSeal(string(last))
	if err != nil {
		return nil, nil, err
	}
	content := data[:start]
	if int64(len(content)) != s.Bytes {
		return nil, nil, fmt.Errorf("%w: %d bytes before the trailer, which counts %d", ErrNotWhole, len(content), s.Bytes)
	}
	if sum := crc32.Checksum(content, castagnoli); sum != s.CRC32C {
		return nil, nil, fmt.Errorf("%w: checksum mismatch: the content's CRC-32C is %08x, the trailer's %08x (a file edited by hand: delete its trailer and set its version to 7)", ErrNotWhole, sum, s.CRC32C)
	}
	return content, s, nil
}

// afterTrailer is the error for data whose last trailer line is
// followed by more lines (appended to after it was written), nil when
// data has no trailer line at all (cut short).
func afterTrailer(data []byte) error {
	at := bytes.LastIndex(data, []byte("\n"+sealPrefix)) + 1
	if at == 0 {
		return nil
	}
	end := bytes.IndexByte(data[at:], '\n')
	if end < 0 {
		return nil
	}
	if _, err := parseSeal(string(data[at : at+end+1])); err != nil {
		return nil // a comment that only looks like one
	}
	rest := data[at+end+1:]
	n := bytes.Count(rest, []byte("\n"))
	if len(rest) > 0 && rest[len(rest)-1] != '\n' {
		n++
	}
	lines := "lines"
	if n == 1 {
		lines = "line"
	}
	return fmt.Errorf("%w: %d %s after its trailer (# sealed: …, line %d): the file was appended to after it was written", ErrNotWhole, n, lines, bytes.Count(data[:at], []byte("\n"))+1)
}

// parseSeal reads a trailer line, which must be exactly as line writes
// it (a line cut short, or changed, is not).
func parseSeal(line string) (*seal, error) {
	bad := func(why string) error {
		return fmt.Errorf("%w: malformed trailer (%s): %q", ErrNotWhole, why, line)
	}
	body, ok := strings.CutSuffix(strings.TrimPrefix(line, sealPrefix), "\n")
	if !ok {
		return nil, bad("no newline")
	}
	s := &seal{}
	for i, kv := range strings.Split(body, " ") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, bad(kv)
		}
		switch {
		case i == 0 && k == "bytes":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, bad(kv)
			}
			s.Bytes = n
		case i == 1 && k == "crc32c":
			n, err := strconv.ParseUint(v, 16, 32)
			if err != nil {
				return nil, bad(kv)
			}
			s.CRC32C = uint32(n)
		case i >= 2:
			n, err := strconv.Atoi(v)
			if err != nil {
				return nil, bad(kv)
			}
			s.Counts = append(s.Counts, count{List: k, N: n})
		default:
			return nil, bad(kv)
		}
	}
	if s.line() != line {
		return nil, bad("not as written")
	}
	return s, nil
}

// sealer counts and checksums what Encode writes.
type sealer struct {
	w     io.Writer
	crc   hash.Hash32
	bytes int64
}

// Write writes p to the underlying writer, counting and checksumming
// what it took.
func (s *sealer) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	s.crc.Write(p[:n])
	s.bytes += int64(n)
	return n, err
}

// WriteFile encodes st (Encode, without a comment) to path atomically:
// into a temporary file in path's directory, synced, renamed over path,
// and the directory synced, so that a crash leaves the old file or the
// new one, never part of one. The temporary file is removed on error.
func WriteFile(path string, st *State) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("snapshot: WriteFile: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	bw := bufio.NewWriter(f)
	if err := Encode(bw, st, ""); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("snapshot: WriteFile: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("snapshot: WriteFile: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("snapshot: WriteFile: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("snapshot: WriteFile: %w", err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("snapshot: WriteFile: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("snapshot: WriteFile: syncing %s: %w", dir, err)
	}
	return nil
}
