package gpusched

import (
	"reflect"
	"strconv"
	"testing"
)

// TestJobListingLine checks the layout job's comment promises: the fields
// listing a waiting job reads for its row (reasonCycle, state, and its
// entry's ID, Ref and class) lie in one 64-byte cache line of every job
// allocated as newJob allocates it. A field added before them, or a
// runtime that no longer puts its 8-byte type header before a large
// object with pointers, fails it: then the listing reads two cold lines a
// row (about a millisecond more in Schedule/full-10000-pending/100k,
// which lists 9,012 rows).
func TestJobListingLine(t *testing.T) {
	if strconv.IntSize != 64 {
		t.Skip("job's layout is tuned for 64-bit platforms (8-byte words and type header)")
	}
	const line = 64
	keep := make([]*job, 0, 256) // live, so that each is a fresh slot
	for i := 0; i < cap(keep); i++ {
		j := &job{}
		keep = append(keep, j)
		v := reflect.ValueOf(j).Elem()
		e := v.FieldByName("entry")
		fields := []reflect.Value{v.FieldByName("reasonCycle"), v.FieldByName("state"), e.Field(0), e.Field(1), e.Field(2)}
		for k, want := range []string{"ID", "Ref", "class"} {
			if got := e.Type().Field(k).Name; got != want {
				t.Fatalf("queue.Entry's field %d is %s, not %s: update job's layout and this test", k, got, want)
			}
		}
		first := fields[0].UnsafeAddr() / line
		for _, f := range fields {
			lo, hi := f.UnsafeAddr(), f.UnsafeAddr()+f.Type().Size()-1
			if lo/line != first || hi/line != first {
				t.Fatalf("job %d: a %s at %#x–%#x is not on the cache line of reasonCycle (%#x): listing a waiting job reads two lines", i, f.Type(), lo, hi, fields[0].UnsafeAddr())
			}
		}
	}
}
