package registry

import "testing"

// Every propertyNames of the schema is one that nameProblems checks: a new
// one would otherwise be reported by the library alone, at a location that
// may be wrong, and Parse drops those.
func TestEveryPropertyNamesChecked(t *testing.T) {
	n := 0
	var walk func(any)
	walk = func(x any) {
		switch x := x.(type) {
		case map[string]any:
			for k, v := range x {
				if k == "propertyNames" {
					n++
				}
				walk(v)
			}
		case []any:
			for _, v := range x {
				walk(v)
			}
		}
	}
	walk(schemaDoc)
	if n != len(namePatterns) {
		t.Errorf("the schema has %d propertyNames, nameProblems checks %d", n, len(namePatterns))
	}
}
