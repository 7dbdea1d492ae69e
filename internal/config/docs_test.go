package config

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// Every key Relay reads is documented in docs/config.md, written as `key`.
func TestEveryKeyIsDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	seen := map[reflect.Type]bool{}
	checked := 0
	var walk func(typ reflect.Type, path string)
	walk = func(typ reflect.Type, path string) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || seen[typ] || typ.PkgPath() != reflect.TypeFor[Config]().PkgPath() {
			return
		}
		seen[typ] = true
		for i := range typ.NumField() {
			f := typ.Field(i)
			if f.Name == "_" || !f.IsExported() || f.Tag.Get("relay") == "ignored" {
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name == "-" {
				continue
			}
			if strings.Contains(opts, "inline") || name == "" {
				walk(f.Type, path)
				continue
			}
			checked++
			// A key is written alone in its section's table (`name`), or with
			// the end of its path (`embeddings.dimensions`).
			documented := false
			segs := strings.Split(path+name, ".")
			for k := range segs {
				key := strings.Join(segs[k:], ".")
				if strings.Contains(doc, "`"+key+"`") || strings.Contains(doc, "`"+key+".") || strings.Contains(doc, "`"+key+":") {
					documented = true
					break
				}
			}
			if !documented {
				t.Errorf("%s%s is not documented in docs/config.md", path, name)
			}
			walk(f.Type, path+name+".")
		}
	}
	walk(reflect.TypeFor[Config](), "")
	if checked < 80 {
		t.Fatalf("only %d keys checked: the walk missed the config's structure", checked)
	}
}
