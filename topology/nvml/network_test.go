package nvml

import (
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/topology"
)

const goodNetwork = `version: 1
levels:
  - name: spine
  - name: tor
    bandwidthGBps: 50
switches:
  - name: spine1
    level: spine
  - name: tor01
    level: tor
    parent: spine1
    hosts: ["dgx[001-002]", dgx009]
  - {name: tor02, level: tor, parent: spine1, hosts: dgx003}
`

func TestParseNetwork(t *testing.T) {
	n, err := ParseNetwork([]byte(goodNetwork), "net.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := &Network{
		Levels: []topology.LevelSpec{{Name: "spine"}, {Name: "tor", BandwidthGBps: 50}},
		Switches: []NetworkSwitch{
			{Name: "spine1", Level: "spine", Line: 7},
			{Name: "tor01", Level: "tor", Parent: "spine1", Hosts: []string{"dgx[001-002]", "dgx009"}, Line: 9},
			{Name: "tor02", Level: "tor", Parent: "spine1", Hosts: []string{"dgx003"}, Line: 13},
		},
	}
	if !reflect.DeepEqual(n, want) {
		t.Errorf("got  %+v\nwant %+v", n, want)
	}
	// JSON is YAML.
	j := `{"version": 1, "levels": ["tor"], "switches": [{"name": "t1", "level": "tor", "hosts": ["a", "b"]}]}`
	if n, err := ParseNetwork([]byte(j), "net.json"); err != nil || len(n.Switches[0].Hosts) != 2 {
		t.Errorf("JSON: %+v %v", n, err)
	}
}

func TestParseNetworkErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in, err string
	}{
		{"empty", "", "net.yaml: empty file; want a mapping with version, levels and switches"},
		{"syntax", "version: 1\nlevels: [tor\n", "net.yaml:1: did not find expected ',' or ']'"},
		{"not a mapping", "- a\n", "net.yaml:1:1: want a mapping with version, levels and switches"},
		{"version", "version: 2\nlevels: [tor]\n", "net.yaml:1:1: version: want version: 1"},
		{"unknown key", "version: 1\ntors: []\n", "net.yaml:2:1: tors: unknown field (want version, levels, switches)"},
		{"duplicate key", "version: 1\nversion: 1\n", "net.yaml:2:1: version: duplicate key"},
		{"reserved level", "version: 1\nlevels: [host]\n", `net.yaml: levels[0]: "host" is a built-in level name`},
		{"unknown level", "version: 1\nlevels: [tor]\nswitches:\n  - {name: t1, level: spine}\n", `net.yaml:4: switches[0].level: unknown level "spine"`},
		{"missing parent", "version: 1\nlevels: [spine, tor]\nswitches:\n  - {name: s1, level: spine}\n  - {name: t1, level: tor}\n",
			`net.yaml:5: switches[1].parent: a tor switch needs a parent at level "spine"`},
		{"parent at wrong level", "version: 1\nlevels: [spine, tor]\nswitches:\n  - {name: s1, level: spine}\n  - {name: t1, level: tor, parent: s1}\n  - {name: t2, level: tor, parent: t1}\n",
			`net.yaml:6: switches[2].parent: parent "t1" is at level "tor"; a tor switch needs one at "spine"`},
		{"unknown parent", "version: 1\nlevels: [spine, tor]\nswitches:\n  - {name: t1, level: tor, parent: s9}\n",
			`net.yaml:4: switches[0].parent: unknown parent switch "s9" (parents must come first)`},
		{"hosts on a spine", "version: 1\nlevels: [spine, tor]\nswitches:\n  - {name: s1, level: spine, hosts: [a]}\n",
			"net.yaml:4: switches[0].hosts: only tor switches (the innermost level) hold hosts"},
		{"host in two ToRs", "version: 1\nlevels: [tor]\nswitches:\n  - {name: t1, level: tor, hosts: [\"h[1-3]\"]}\n  - {name: t2, level: tor, hosts: [h3]}\n",
			`net.yaml:5: switches[1].hosts[0]: host "h3" is under both t1 (line 4) and t2`},
		{"duplicate switch", "version: 1\nlevels: [tor]\nswitches:\n  - {name: t1, level: tor}\n  - {name: t1, level: tor}\n",
			`net.yaml:5: switches[1].name: duplicate switch "t1" (also switches[0], line 4)`},
		{"bad pattern", "version: 1\nlevels: [tor]\nswitches:\n  - {name: t1, level: tor, hosts: [\"h[3-1]\"]}\n",
			`net.yaml:4: switches[0].hosts[0]: name pattern "h[3-1]": range "3-1" goes backwards`},
		{"bad field", "version: 1\nlevels: [tor]\nswitches:\n  - {name: t1, level: tor, uplink: x}\n",
			"net.yaml:4:28: switches[0].uplink: unknown field (want name, level, parent, hosts)"},
		{"bad bandwidth", "version: 1\nlevels: [{name: tor, bandwidthGBps: fast}]\n", "net.yaml:2:37: levels[0].bandwidthGBps: want a number"},
		{"no levels", "version: 1\n", "net.yaml: levels: no network levels"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseNetwork([]byte(tc.in), "net.yaml")
			if err == nil {
				t.Fatal("accepted")
			}
			if err.Error() != tc.err {
				t.Errorf("error %q\nwant  %q", err, tc.err)
			}
			if !errors.Is(err, ErrInvalidNetwork) {
				t.Errorf("%v is not ErrInvalidNetwork", err)
			}
		})
	}
}

func FuzzParseNetwork(f *testing.F) {
	f.Add([]byte(goodNetwork))
	f.Add([]byte("version: 1\nlevels: [tor]\nswitches:\n  - {name: t1, level: tor, hosts: [\"h[1-3]\"]}\n"))
	f.Add([]byte("{}"))
	f.Add([]byte("version: 1\nlevels: [[x]]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := ParseNetwork(data, "f.yaml")
		if err != nil {
			var ne *NetworkError
			if !errors.As(err, &ne) || ne.File != "f.yaml" {
				t.Fatalf("error without a position: %v", err)
			}
			return
		}
		if err := n.Validate(); err != nil {
			t.Fatalf("parsed network does not validate: %v", err)
		}
	})
}

func TestHostRule(t *testing.T) {
	hosts := []string{"r01-n01", "r01-n02", "r02-n01"}
	n, err := HostRule{Pattern: regexp.MustCompile(`^(r\d+)-n\d+$`)}.Network(hosts)
	if err != nil {
		t.Fatal(err)
	}
	want := &Network{Levels: []topology.LevelSpec{{Name: "tor"}}, Switches: []NetworkSwitch{
		{Name: "r01", Level: "tor", Hosts: []string{"r01-n01", "r01-n02"}},
		{Name: "r02", Level: "tor", Hosts: []string{"r02-n01"}},
	}}
	if !reflect.DeepEqual(n, want) {
		t.Errorf("got %+v", n)
	}
	n, err = HostRule{Pattern: regexp.MustCompile(`^r(?P<rack>\d+)`), Switch: "leaf-${rack}", Level: "leaf"}.Network(hosts)
	if err != nil || n.Switches[1].Name != "leaf-02" || n.Levels[0].Name != "leaf" {
		t.Errorf("named group: %+v %v", n, err)
	}
	for _, tc := range []struct {
		rule HostRule
		err  string
	}{
		{HostRule{}, "host rule: no pattern"},
		{HostRule{Pattern: regexp.MustCompile(`^r`)}, "has no group"},
		{HostRule{Pattern: regexp.MustCompile(`^(r01)`)}, `host "r02-n01" does not match`},
		{HostRule{Pattern: regexp.MustCompile(`^r(x?)`)}, `host "r01-n01" gives an empty switch name`},
		{HostRule{Pattern: regexp.MustCompile(`^(r\d+)`), Level: "host"}, "built-in level name"},
	} {
		if _, err := tc.rule.Network(hosts); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%v: error %v, want %q", tc.rule.Pattern, err, tc.err)
		}
	}
}
