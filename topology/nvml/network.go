package nvml

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gpusched/gpusched/topology"
)

// A network file names the switches above the hosts and which hosts hang
// under which switch. It is YAML (or JSON), version 1:
//
//	version: 1
//	levels:                  # outermost first; bandwidthGBps is optional
//	  - name: spine
//	  - name: tor
//	    bandwidthGBps: 50
//	switches:
//	  - name: spine1
//	    level: spine
//	  - name: tor01
//	    level: tor
//	    parent: spine1       # a switch of the level directly above
//	    hosts: ["dgx[001-032]", dgx100]
//
// Only switches of the innermost level list hosts; a host may appear under
// one switch only. Host entries are names or patterns as in cluster files.

// Limits on a network: the file's size, and the number of hosts its
// patterns may name in all.
const (
	MaxNetworkBytes = 16 << 20
	MaxNetworkHosts = 1 << 17
)

// Network places hosts under network switches: the network levels of a
// cluster, its switches, and the hosts under each innermost switch.
type Network struct {
	// Levels are the network levels, outermost first.
	Levels []topology.LevelSpec
	// Switches are the switches, parents before children.
	Switches []NetworkSwitch
}

// NetworkSwitch is one switch of a Network.
type NetworkSwitch struct {
	// Name is the switch's name.
	Name string
	// Level names an entry of Network.Levels.
	Level string
	// Parent names a switch of the level directly above; empty at the
	// outermost level.
	Parent string
	// Hosts lists host names or patterns (innermost level only).
	Hosts []string
	// Line is where the switch is declared in its file, 0 when unknown.
	Line int
}

// ErrInvalidNetwork is the sentinel every *NetworkError unwraps to.
var ErrInvalidNetwork = errors.New("invalid network")

// NetworkError reports a problem in a network file or Network.
type NetworkError struct {
	File   string // file name, may be empty
	Line   int    // 1-based, 0 when unknown
	Column int    // 1-based, 0 when unknown
	Path   string // field path, e.g. "switches[3].parent"
	Msg    string
}

// Error returns "FILE:LINE:COLUMN: PATH: MSG", leaving out what is unknown.
func (e *NetworkError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
	}
	if e.Line > 0 {
		if b.Len() > 0 {
			b.WriteByte(':')
		}
		b.WriteString(strconv.Itoa(e.Line))
		if e.Column > 0 {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(e.Column))
		}
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap returns ErrInvalidNetwork.
func (e *NetworkError) Unwrap() error { return ErrInvalidNetwork }

// ParseNetwork decodes and validates a network file held in data; name is
// used in errors. Every error is a *NetworkError with a line where the
// problem has one.
func ParseNetwork(data []byte, name string) (*Network, error) {
	perr := func(n *yaml.Node, path, format string, args ...any) error {
		e := &NetworkError{File: name, Path: path, Msg: fmt.Sprintf(format, args...)}
		if n != nil {
			e.Line, e.Column = n.Line, n.Column
		}
		return e
	}
	if len(data) > MaxNetworkBytes {
		return nil, perr(nil, "", "file larger than %d bytes", MaxNetworkBytes)
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		e := &NetworkError{File: name, Msg: msg}
		if line, rest, ok := strings.Cut(strings.TrimPrefix(msg, "line "), ": "); ok && strings.HasPrefix(msg, "line ") {
			if l, err := strconv.Atoi(line); err == nil {
				e.Line, e.Msg = l, rest
			}
		}
		if msg == "EOF" {
			e.Msg = "empty file; want a mapping with version, levels and switches"
		}
		return nil, e
	}
	if len(doc.Content) == 0 {
		return nil, perr(&doc, "", "empty file; want a mapping with version, levels and switches")
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, perr(root, "", "want a mapping with version, levels and switches")
	}
	net := &Network{}
	version := 0
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if seen[k.Value] {
			return nil, perr(k, k.Value, "duplicate key")
		}
		seen[k.Value] = true
		switch k.Value {
		case "version":
			n, err := intScalar(v)
			if err != nil {
				return nil, perr(v, "version", "%v", err)
			}
			version = n
		case "levels":
			if v.Kind != yaml.SequenceNode {
				return nil, perr(v, "levels", "want a list of levels")
			}
			for j, item := range v.Content {
				p := fmt.Sprintf("levels[%d]", j)
				var l topology.LevelSpec
				switch item.Kind {
				case yaml.ScalarNode:
					l.Name = item.Value
				case yaml.MappingNode:
					for x := 0; x+1 < len(item.Content); x += 2 {
						kk, vv := item.Content[x], item.Content[x+1]
						switch kk.Value {
						case "name":
							if vv.Kind != yaml.ScalarNode {
								return nil, perr(vv, p+".name", "want a name")
							}
							l.Name = vv.Value
						case "bandwidthGBps":
							f, err := strconv.ParseFloat(vv.Value, 64)
							if vv.Kind != yaml.ScalarNode || err != nil {
								return nil, perr(vv, p+".bandwidthGBps", "want a number")
							}
							l.BandwidthGBps = f
						default:
							return nil, perr(kk, p+"."+kk.Value, "unknown field (want name, bandwidthGBps)")
						}
					}
				default:
					return nil, perr(item, p, "want a level name or a mapping with name")
				}
				net.Levels = append(net.Levels, l)
			}
		case "switches":
			if v.Kind != yaml.SequenceNode {
				return nil, perr(v, "switches", "want a list of switches")
			}
			for j, item := range v.Content {
				p := fmt.Sprintf("switches[%d]", j)
				if item.Kind != yaml.MappingNode {
					return nil, perr(item, p, "want a mapping with name, level, parent, hosts")
				}
				sw := NetworkSwitch{Line: item.Line}
				for x := 0; x+1 < len(item.Content); x += 2 {
					kk, vv := item.Content[x], item.Content[x+1]
					fp := p + "." + kk.Value
					switch kk.Value {
					case "name", "level", "parent":
						if vv.Kind != yaml.ScalarNode {
							return nil, perr(vv, fp, "want a name")
						}
						switch kk.Value {
						case "name":
							sw.Name = vv.Value
						case "level":
							sw.Level = vv.Value
						default:
							sw.Parent = vv.Value
						}
					case "hosts":
						switch vv.Kind {
						case yaml.ScalarNode:
							sw.Hosts = []string{vv.Value}
						case yaml.SequenceNode:
							for h, hn := range vv.Content {
								if hn.Kind != yaml.ScalarNode {
									return nil, perr(hn, fmt.Sprintf("%s[%d]", fp, h), "want a host name or pattern")
								}
								sw.Hosts = append(sw.Hosts, hn.Value)
							}
						default:
							return nil, perr(vv, fp, "want a list of host names or patterns")
						}
					default:
						return nil, perr(kk, fp, "unknown field (want name, level, parent, hosts)")
					}
				}
				net.Switches = append(net.Switches, sw)
			}
		default:
			return nil, perr(k, k.Value, "unknown field (want version, levels, switches)")
		}
	}
	if version != 1 {
		return nil, perr(root, "version", "want version: 1")
	}
	if _, err := net.hostSwitches(); err != nil {
		var ne *NetworkError
		if errors.As(err, &ne) {
			ne.File = name
		}
		return nil, err
	}
	return net, nil
}

func intScalar(n *yaml.Node) (int, error) {
	if n.Kind != yaml.ScalarNode {
		return 0, fmt.Errorf("want a whole number")
	}
	v, err := strconv.Atoi(n.Value)
	if err != nil {
		return 0, fmt.Errorf("%q is not a whole number", n.Value)
	}
	return v, nil
}

// Validate checks n: level names, switch names, levels and parents, and
// that no host is under two switches.
func (n *Network) Validate() error {
	_, err := n.hostSwitches()
	return err
}

// hostSwitches validates n and returns each host's switch index.
func (n *Network) hostSwitches() (map[string]int, error) {
	bad := func(line int, path, format string, args ...any) error {
		return &NetworkError{Line: line, Path: path, Msg: fmt.Sprintf(format, args...)}
	}
	if len(n.Levels) == 0 {
		return nil, bad(0, "levels", "no network levels")
	}
	if len(n.Levels) > topology.MaxLevels {
		return nil, bad(0, "levels", "%d levels; at most %d", len(n.Levels), topology.MaxLevels)
	}
	level := map[string]int{}
	for i, l := range n.Levels {
		p := fmt.Sprintf("levels[%d]", i)
		switch l.Name {
		case "":
			return nil, bad(0, p, "empty level name")
		case "nvlink", "fabric", "host", "node", "cluster":
			return nil, bad(0, p, "%q is a built-in level name", l.Name)
		}
		if _, dup := level[l.Name]; dup {
			return nil, bad(0, p, "duplicate level %q", l.Name)
		}
		if l.BandwidthGBps < 0 || l.BandwidthGBps > topology.MaxBandwidthGBps || l.BandwidthGBps != l.BandwidthGBps {
			return nil, bad(0, p+".bandwidthGBps", "bandwidth %v out of range", l.BandwidthGBps)
		}
		level[l.Name] = i
	}
	inner := len(n.Levels) - 1
	byName := map[string]int{}
	hostAt := map[string]int{}
	for i, sw := range n.Switches {
		p := fmt.Sprintf("switches[%d]", i)
		if sw.Name == "" || strings.ContainsAny(sw.Name, " \t\r\n/[]") {
			return nil, bad(sw.Line, p+".name", "switch name %q must be non-empty, without white space, '/', '[' or ']'", sw.Name)
		}
		if j, dup := byName[sw.Name]; dup {
			return nil, bad(sw.Line, p+".name", "duplicate switch %q (also switches[%d], line %d)", sw.Name, j, n.Switches[j].Line)
		}
		lv, ok := level[sw.Level]
		if !ok {
			return nil, bad(sw.Line, p+".level", "unknown level %q", sw.Level)
		}
		switch {
		case lv == 0 && sw.Parent != "":
			return nil, bad(sw.Line, p+".parent", "switches at the outermost level %q have no parent", sw.Level)
		case lv > 0 && sw.Parent == "":
			return nil, bad(sw.Line, p+".parent", "a %s switch needs a parent at level %q", sw.Level, n.Levels[lv-1].Name)
		case lv > 0:
			pi, ok := byName[sw.Parent]
			if !ok {
				return nil, bad(sw.Line, p+".parent", "unknown parent switch %q (parents must come first)", sw.Parent)
			}
			if pl := level[n.Switches[pi].Level]; pl != lv-1 {
				return nil, bad(sw.Line, p+".parent", "parent %q is at level %q; a %s switch needs one at %q", sw.Parent, n.Switches[pi].Level, sw.Level, n.Levels[lv-1].Name)
			}
		}
		if len(sw.Hosts) > 0 && lv != inner {
			return nil, bad(sw.Line, p+".hosts", "only %s switches (the innermost level) hold hosts", n.Levels[inner].Name)
		}
		byName[sw.Name] = i
		for hi, pat := range sw.Hosts {
			names, err := topology.ExpandNames(pat)
			if err != nil {
				return nil, bad(sw.Line, fmt.Sprintf("%s.hosts[%d]", p, hi), "%v", err)
			}
			if len(hostAt)+len(names) > MaxNetworkHosts {
				return nil, bad(sw.Line, fmt.Sprintf("%s.hosts[%d]", p, hi), "more than %d hosts in the network", MaxNetworkHosts)
			}
			for _, h := range names {
				if j, dup := hostAt[h]; dup {
					return nil, bad(sw.Line, fmt.Sprintf("%s.hosts[%d]", p, hi), "host %q is under both %s (line %d) and %s", h, n.Switches[j].Name, n.Switches[j].Line, sw.Name)
				}
				hostAt[h] = i
			}
		}
	}
	return hostAt, nil
}

// HostRule derives ToR membership from host names: the ToR of a host is
// Switch expanded with the submatches of Pattern on the host's name
// (regexp.Expand syntax: "$1", "${rack}"). With Switch empty, the first
// submatch names the ToR.
//
// For example the pattern `^(r\d+)-n\d+$` puts r01-n07 under ToR r01, and
// with Switch "tor-$1" under tor-r01.
type HostRule struct {
	Pattern *regexp.Regexp
	Switch  string
	// Level names the level; empty means "tor".
	Level string
}

// Network returns the one-level network the rule gives hosts: one switch
// per distinct ToR name, in order of the first host under it. It fails for
// a host that the pattern does not match or that yields an empty name.
func (r HostRule) Network(hosts []string) (*Network, error) {
	if r.Pattern == nil {
		return nil, fmt.Errorf("host rule: no pattern")
	}
	tmpl := r.Switch
	if tmpl == "" {
		if r.Pattern.NumSubexp() < 1 {
			return nil, fmt.Errorf("host rule: pattern %q has no group to name the switch; add (…) or give a switch name template", r.Pattern)
		}
		tmpl = "$1"
	}
	level := r.Level
	if level == "" {
		level = "tor"
	}
	net := &Network{Levels: []topology.LevelSpec{{Name: level}}}
	index := map[string]int{}
	for _, h := range hosts {
		m := r.Pattern.FindStringSubmatchIndex(h)
		if m == nil {
			return nil, fmt.Errorf("host rule: host %q does not match %q", h, r.Pattern)
		}
		name := string(r.Pattern.ExpandString(nil, tmpl, h, m))
		if name == "" {
			return nil, fmt.Errorf("host rule: host %q gives an empty switch name", h)
		}
		i, ok := index[name]
		if !ok {
			i = len(net.Switches)
			index[name] = i
			net.Switches = append(net.Switches, NetworkSwitch{Name: name, Level: level})
		}
		net.Switches[i].Hosts = append(net.Switches[i].Hosts, h)
	}
	if err := net.Validate(); err != nil {
		return nil, fmt.Errorf("host rule: %w", err)
	}
	return net, nil
}

// ParseHostRule compiles a host rule from a regular expression (Go syntax)
// and a switch name template (empty: the first group).
func ParseHostRule(pattern, switchName string) (HostRule, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return HostRule{}, fmt.Errorf("host rule: %v", err)
	}
	if switchName == "" && re.NumSubexp() < 1 {
		return HostRule{}, fmt.Errorf("host rule: pattern %q has no group to name the switch; add (…) or give a switch name template", pattern)
	}
	return HostRule{Pattern: re, Switch: switchName}, nil
}
