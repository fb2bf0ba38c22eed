package snapshot

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
)

// notInState are the fields of gpusched.Config a state does not carry as a
// setting of its own, each with where it comes from instead. Every other
// field must reach the file: TestEveryConfigSettingCarried fails for a new
// Config field until the state carries it or it is listed here (with its
// reason in the package documentation's Limits).
var notInState = map[string]string{
	"Cluster":     "the state's cluster (State.Cluster)",
	"Placer":      "named by CaptureOptions.Placer (State.Placer)",
	"Preemptor":   "a value with code: Options.Preemptor at Load (a note says so)",
	"OmitPending": "documented as not saved (Limits)",
	"Stats":       "documented as not saved (Limits)",
	"Queues":      "State.Queues (TestRoundTrip)",
	"Defrag":      "State.Defrag (TestV6Loads, the Defrag equivalence property)",
	"Elastic":     "State.Elastic (the elastic equivalence tests)",
}

// TestEveryConfigSettingCarried: for each scalar setting of gpusched.Config,
// a Config with only that setting changed captures, encodes and decodes to
// a state that differs from the default one and loads, and the decoded
// state holds the setting under the same name — so a setting added to
// Config without a place in the state fails here instead of being
// silently reset by a restart. (That Load hands each one back to New is
// what the equivalence properties check, for the settings they draw.)
func TestEveryConfigSettingCarried(t *testing.T) {
	c, err := topology.LoadPreset("dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	base := gpusched.Config{Cluster: c, Queues: queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "train"}}}}}
	encode := func(t *testing.T, cfg gpusched.Config) []byte {
		t.Helper()
		s, err := gpusched.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		st, err := Capture(s, t0, CaptureOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := Encode(&buf, st, "settings"); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	plain := encode(t, base)
	ct := reflect.TypeFor[gpusched.Config]()
	for i := range ct.NumField() {
		f := ct.Field(i)
		if _, ok := notInState[f.Name]; ok {
			continue
		}
		t.Run(f.Name, func(t *testing.T) {
			cfg := base
			v := reflect.ValueOf(&cfg).Elem().Field(i)
			switch v.Kind() {
			case reflect.Bool:
				v.SetBool(true)
			case reflect.Int, reflect.Int64:
				if v.Type() == reflect.TypeFor[time.Duration]() {
					v.SetInt(int64(7 * time.Second))
				} else {
					v.SetInt(3)
				}
			case reflect.Uint64:
				v.SetUint(5)
			default:
				t.Fatalf("Config.%s (%s): no generic value; carry it and list it in notInState with the test that covers it", f.Name, f.Type)
			}
			data := encode(t, cfg)
			if bytes.Equal(data, plain) {
				t.Fatalf("Config.%s changed, but the state file is the default one: the setting is not carried", f.Name)
			}
			l, err := Load(data, "settings.yaml", Options{NoPreemption: true})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := fieldOf(l.State, f.Name), v.Interface(); !reflect.DeepEqual(got, want) {
				t.Fatalf("Config.%s = %v, the loaded state's %s = %v", f.Name, want, f.Name, got)
			}
		})
	}
}

// fieldOf returns the state's field of that name (nil when it has none).
func fieldOf(st *State, name string) any {
	v := reflect.ValueOf(st).Elem().FieldByName(name)
	if !v.IsValid() {
		return nil
	}
	return v.Interface()
}
