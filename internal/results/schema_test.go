package results

import (
	"bytes"
	"encoding/json"
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The JSON Schema of the result document, docs/result.schema.json, is
// generated from the Go types of this package (their JSON names, their
// omitempty, their doc comments as descriptions, the Fail*, Scenario* and
// Latency* constants as enumerations). TestSchemaUpToDate fails when the
// file and the types differ; regenerate it with
//
//	go test ./internal/results -run TestSchemaUpToDate -update-schema
var updateSchema = flag.Bool("update-schema", false, "rewrite docs/result.schema.json from the Go types")

const schemaPath = "../../docs/result.schema.json"

const schemaID = "https://github.com/volanogo/volanogo/blob/main/docs/result.schema.json"

// obj is a JSON object whose keys keep their order.
type obj []kv

type kv struct {
	k string
	v any
}

func (o obj) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.k)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(f.v)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// goSource is what the package's source says beyond reflection: doc
// comments by "Type.Field" (and "Type"), constants by name prefix.
type goSource struct {
	docs   map[string]string
	consts map[string][]string // prefix -> values, in source order
}

func readSource(t *testing.T) goSource {
	t.Helper()
	src := goSource{docs: map[string]string{}, consts: map[string][]string{}}
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	sort.Strings(files)
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		require.NoError(t, err)
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range gd.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					doc := s.Doc
					if doc == nil && len(gd.Specs) == 1 {
						doc = gd.Doc
					}
					src.docs[s.Name.Name] = clean(doc)
					st, ok := s.Type.(*ast.StructType)
					if !ok {
						continue
					}
					for _, field := range st.Fields.List {
						text := clean(field.Doc)
						if text == "" {
							text = clean(field.Comment)
						}
						for _, n := range field.Names {
							src.docs[s.Name.Name+"."+n.Name] = text
						}
					}
				case *ast.ValueSpec:
					if gd.Tok != token.CONST {
						continue
					}
					for i, n := range s.Names {
						if i >= len(s.Values) {
							continue
						}
						lit, ok := s.Values[i].(*ast.BasicLit)
						if !ok || lit.Kind != token.STRING {
							continue
						}
						v, err := strconv.Unquote(lit.Value)
						require.NoError(t, err)
						for _, prefix := range []string{"Fail", "Scenario", "Latency"} {
							if strings.HasPrefix(n.Name, prefix) {
								src.consts[prefix] = append(src.consts[prefix], v)
							}
						}
					}
				}
			}
		}
	}
	return src
}

// clean makes a doc comment one paragraph of text.
func clean(g *ast.CommentGroup) string {
	if g == nil {
		return ""
	}
	return strings.Join(strings.Fields(g.Text()), " ")
}

// generator turns Go types into JSON Schema.
type generator struct {
	src  goSource
	defs map[string]obj
	// order of the definitions, as first met
	order []string
}

var timeType = reflect.TypeFor[time.Time]()

// jsonField is one field of a struct as encoding/json sees it.
type jsonField struct {
	name      string
	owner     string // the Go type declaring it
	goName    string
	typ       reflect.Type
	omitEmpty bool
}

// jsonFields lists the fields of struct type t as encoding/json writes
// them, embedded structs flattened.
func jsonFields(t reflect.Type) []jsonField {
	var out []jsonField
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		omit := slices.Contains(strings.Split(opts, ","), "omitempty") || slices.Contains(strings.Split(opts, ","), "omitzero")
		out = append(out, jsonField{name: name, owner: t.Name(), goName: f.Name, typ: f.Type, omitEmpty: omit})
	}
	return out
}

// schema is the schema of a value of type t; nullable when Go may write
// null for it (a nil slice, map or pointer that is not omitted).
func (g *generator) schema(t reflect.Type, nullable bool) obj {
	var s obj
	switch {
	case t == timeType:
		s = obj{{"type", "string"}, {"format", "date-time"}}
	case t.Kind() == reflect.Pointer:
		return g.schema(t.Elem(), nullable)
	case t.Kind() == reflect.Struct:
		g.define(t)
		s = obj{{"$ref", "#/$defs/" + t.Name()}}
		if nullable {
			return obj{{"anyOf", []obj{s, {{"type", "null"}}}}}
		}
		return s
	case t.Kind() == reflect.Slice:
		s = obj{{"type", "array"}, {"items", g.schema(t.Elem(), false)}}
	case t.Kind() == reflect.Map:
		s = obj{{"type", "object"}, {"additionalProperties", g.schema(t.Elem(), false)}}
	case t.Kind() == reflect.String:
		s = obj{{"type", "string"}}
	case t.Kind() == reflect.Bool:
		s = obj{{"type", "boolean"}}
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		s = obj{{"type", "integer"}}
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		s = obj{{"type", "number"}}
	default:
		panic("no schema for " + t.String())
	}
	if nullable {
		s[0] = kv{"type", []string{s[0].v.(string), "null"}}
	}
	return s
}

// define adds the definition of struct type t.
func (g *generator) define(t reflect.Type) {
	if _, ok := g.defs[t.Name()]; ok {
		return
	}
	g.defs[t.Name()] = nil // no recursion
	g.order = append(g.order, t.Name())
	var props obj
	var required []string
	for _, f := range jsonFields(t) {
		k := f.typ.Kind()
		nullable := !f.omitEmpty && (k == reflect.Slice || k == reflect.Map || k == reflect.Pointer)
		ps := g.schema(f.typ, nullable)
		if d := g.src.docs[f.owner+"."+f.goName]; d != "" {
			if ps[0].k == "$ref" || ps[0].k == "anyOf" {
				ps = obj{{"description", d}, {"allOf", []obj{ps}}}
			} else {
				ps = append(obj{{"description", d}}, ps...)
			}
		}
		ps = g.refine(t.Name(), f.name, ps)
		props = append(props, kv{f.name, ps})
		if !f.omitEmpty {
			required = append(required, f.name)
		}
	}
	def := obj{{"type", "object"}}
	if d := g.src.docs[t.Name()]; d != "" {
		def = append(obj{{"description", d}}, def...)
	}
	def = append(def, kv{"properties", props})
	if len(required) > 0 {
		def = append(def, kv{"required", required})
	}
	g.defs[t.Name()] = def
}

// refine adds what reflection cannot know: the schema versions this build
// reads, and the enumerations of the constants.
func (g *generator) refine(owner, field string, s obj) obj {
	switch owner + "." + field {
	case "Document.schema":
		return append(s, kv{"minimum", 1}, kv{"maximum", SchemaVersion})
	case "Config.scenario":
		return append(s, kv{"enum", g.src.consts["Scenario"]})
	case "Failure.kind":
		return append(s, kv{"enum", g.src.consts["Fail"]})
	case "Document.latency":
		return append(s, kv{"propertyNames", obj{{"enum", g.src.consts["Latency"]}}})
	}
	return s
}

// generateSchema is the schema of Document, as indented JSON.
func generateSchema(t *testing.T) []byte {
	t.Helper()
	g := &generator{src: readSource(t), defs: map[string]obj{}}
	g.define(reflect.TypeFor[Document]())
	var defs obj
	for _, name := range g.order[1:] {
		defs = append(defs, kv{name, g.defs[name]})
	}
	top := obj{
		{"$schema", "https://json-schema.org/draft/2020-12/schema"},
		{"$id", schemaID},
		{"title", "volanogo result document, schema " + strconv.Itoa(SchemaVersion)},
		{"$comment", "Generated from the Go types of internal/results by `go test ./internal/results -run TestSchemaUpToDate -update-schema`; do not edit. Readers ignore fields they do not know: a later build of the same schema version may add some."},
	}
	top = append(top, g.defs["Document"]...)
	top = append(top, kv{"$defs", defs})
	b, err := json.MarshalIndent(top, "", "  ")
	require.NoError(t, err)
	return append(b, '\n')
}

func TestSchemaUpToDate(t *testing.T) {
	want := generateSchema(t)
	if *updateSchema {
		require.NoError(t, os.WriteFile(schemaPath, want, 0o644))
	}
	got, err := os.ReadFile(schemaPath)
	require.NoError(t, err)
	// The descriptions are the doc comments': a comment edited without
	// regenerating leaves a stale description, not a wrong schema.
	assert.Equal(t, withoutDescriptions(t, want), withoutDescriptions(t, got),
		"docs/result.schema.json is not the Go types': go test ./internal/results -run TestSchemaUpToDate -update-schema")
}

// withoutDescriptions is a schema, its descriptions dropped, re-indented.
func withoutDescriptions(t *testing.T, schema []byte) string {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(schema, &v))
	var strip func(any)
	strip = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			delete(x, "description")
			for _, e := range x {
				strip(e)
			}
		case []any:
			for _, e := range x {
				strip(e)
			}
		}
	}
	strip(v)
	b, err := json.MarshalIndent(v, "", "  ")
	require.NoError(t, err)
	return string(b)
}

// TestSchemaHasEveryField walks the Go types and the published schema
// together: a field of Document (or of any type within it) that the
// schema lacks, or a property the types no longer have, fails here with
// its path.
func TestSchemaHasEveryField(t *testing.T) {
	data, err := os.ReadFile(schemaPath)
	require.NoError(t, err)
	var s map[string]any
	require.NoError(t, json.Unmarshal(data, &s))
	defs, _ := s["$defs"].(map[string]any)
	var walk func(path string, typ reflect.Type, node map[string]any)
	seen := map[reflect.Type]bool{}
	walk = func(path string, typ reflect.Type, node map[string]any) {
		if seen[typ] {
			return
		}
		seen[typ] = true
		props, _ := node["properties"].(map[string]any)
		fields := jsonFields(typ)
		for _, f := range fields {
			p, ok := props[f.name].(map[string]any)
			if !assert.True(t, ok, "the schema lacks %s.%s (Go %s.%s)", path, f.name, typ.Name(), f.goName) {
				continue
			}
			et := f.typ
			for et.Kind() == reflect.Pointer || et.Kind() == reflect.Slice || et.Kind() == reflect.Map {
				et = et.Elem()
			}
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct && et != timeType {
				def, ok := defs[et.Name()].(map[string]any)
				if assert.True(t, ok, "the schema has no definition of %s (%s.%s)", et.Name(), path, f.name) {
					walk(path+"."+f.name, et, def)
				}
			}
			_ = p
		}
		for name := range props {
			assert.True(t, slices.ContainsFunc(fields, func(f jsonField) bool { return f.name == name }),
				"the schema has %s.%s, which Go's %s no longer has", path, name, typ.Name())
		}
	}
	walk("document", reflect.TypeFor[Document](), s)
}

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(schemaPath)
	require.NoError(t, err)
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	require.NoError(t, c.AddResource(schemaID, doc))
	sch, err := c.Compile(schemaID)
	require.NoError(t, err)
	return sch
}

func validateJSON(sch *jsonschema.Schema, data []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return err
	}
	return sch.Validate(v)
}

// TestSchemaValidatesDocuments: every result document in testdata and a
// document with every field set, as this build writes it, are valid; the
// bad ones and a few broken documents are not.
func TestSchemaValidatesDocuments(t *testing.T) {
	sch := compileSchema(t)
	var files []string
	require.NoError(t, filepath.WalkDir("../../testdata", func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".json") &&
			!strings.Contains(path, "/bad/") && !strings.Contains(path, "/golden/") { // golden: report's output
			files = append(files, path)
		}
		return err
	}))
	require.NotEmpty(t, files)
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		assert.NoError(t, validateJSON(sch, data), f)
	}

	full, err := json.Marshal(fullDocument(t))
	require.NoError(t, err)
	require.NoError(t, validateJSON(sch, full), "a document with every field set")
	empty, err := json.Marshal(&Document{Schema: SchemaVersion, Config: Config{Scenario: ScenarioTurns}})
	require.NoError(t, err)
	require.NoError(t, validateJSON(sch, empty), "nil slices and maps are written as null")

	for _, name := range []string{"not-a-document.json", "unknown-schema.json"} {
		data, err := os.ReadFile(filepath.Join("../../testdata/report/bad", name))
		require.NoError(t, err)
		assert.Error(t, validateJSON(sch, data), name)
	}
	var m map[string]any
	require.NoError(t, json.Unmarshal(full, &m))
	for name, mutate := range map[string]func(map[string]any){
		"no run_id":          func(m map[string]any) { delete(m, "run_id") },
		"count as a string":  func(m map[string]any) { m["counts"].(map[string]any)["sent"] = "12" },
		"unknown failure":    func(m map[string]any) { m["failures"].([]any)[0].(map[string]any)["kind"] = "gremlins" },
		"a later schema":     func(m map[string]any) { m["schema"] = SchemaVersion + 1 },
		"started not a time": func(m map[string]any) { m["started"] = "yesterday" },
	} {
		c := cloneJSON(t, m)
		mutate(c)
		b, err := json.Marshal(c)
		require.NoError(t, err)
		assert.Error(t, validateJSON(sch, b), name)
	}
}

func cloneJSON(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(m)
	require.NoError(t, err)
	var c map[string]any
	require.NoError(t, json.Unmarshal(b, &c))
	return c
}
