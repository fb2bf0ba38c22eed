package gpusched

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestArchitectureCycleSteps keeps ARCHITECTURE.md's "The cycle's steps"
// true to Schedule: every call Schedule makes on the Scheduler or one of
// its concerns is named there, in the order Schedule makes it.
func TestArchitectureCycleSteps(t *testing.T) {
	calls := scheduleCalls(t)
	doc, err := os.ReadFile("ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	i := strings.Index(text, "### The cycle's steps")
	if i < 0 {
		t.Fatal("ARCHITECTURE.md: no section \"The cycle's steps\"")
	}
	section := text[i:]
	if j := strings.Index(section[4:], "\n### "); j >= 0 {
		section = section[:j+4]
	}
	names := regexp.MustCompile("`([A-Za-z.]+)`").FindAllStringSubmatch(section, -1)
	pos := 0
	for _, c := range calls {
		found := false
		for k := pos; k < len(names); k++ {
			if names[k][1] == c {
				pos, found = k+1, true
				break
			}
		}
		if !found {
			t.Errorf("ARCHITECTURE.md's cycle steps do not name `%s` after the steps before it (Schedule's calls in order: %v)", c, calls)
		}
	}
}

// scheduleCalls returns, in order, the methods Schedule calls on s or on
// one of s's fields, as "name" or "field.name", leaving out test hooks.
func scheduleCalls(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "cycle.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var calls []string
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Name.Name != "Schedule" || fd.Recv == nil {
			continue
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			switch x := sel.X.(type) {
			case *ast.Ident:
				if x.Name == "s" && !strings.HasPrefix(sel.Sel.Name, "test") {
					calls = append(calls, sel.Sel.Name)
				}
			case *ast.SelectorExpr:
				if id, ok := x.X.(*ast.Ident); ok && id.Name == "s" {
					name := x.Sel.Name + "." + sel.Sel.Name
					if x.Sel.Name == "cyc" {
						name = "cycleState." + sel.Sel.Name
					}
					calls = append(calls, name)
				}
			}
			return true
		})
	}
	if len(calls) == 0 {
		t.Fatal("cycle.go: no calls found in Scheduler.Schedule")
	}
	return calls
}
