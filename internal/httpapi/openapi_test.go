package httpapi_test

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/internal/dashboard"
	"github.com/gyrum-labs/warp/internal/httpapi"
	"github.com/gyrum-labs/warp/internal/httpkit"
)

// The OpenAPI document (openapi.json) and the heartbeat JSON Schema
// (heartbeat.schema.json) are the checked-in contract of the HTTP API. The
// tests here hold them to the server:
//
//   - TestOpenAPIDocumentIsServed: both parse, the document is OpenAPI 3.1,
//     every $ref resolves, every example fits its schema, and the server
//     answers both byte for byte without a token.
//   - TestOpenAPIRoutesMatchServer: the route patterns registered in the
//     source (every s.handle and Mount call, found by parsing the module)
//     are exactly the documented operations (x-warp-route), and a request
//     to each documented path and method reaches that very pattern.
//   - TestOpenAPIStatuses (openapi_status_test.go): every documented
//     (operation, status, error code) is produced by a real request, and
//     every answer fits its documented schema.
//   - TestOpenAPISchemasMatchWireTypes: the schemas have exactly the JSON
//     fields of the Go wire types, and answers require the fields Go always
//     writes.
//   - TestHeartbeatSchema: the examples validate, bad bodies do not, and
//     the schema agrees with the server on a table of bodies.

// docSet returns the decoded OpenAPI document and a validator over both documents.
func docSet(t testing.TB) (map[string]any, *schemaSet) {
	t.Helper()
	var oa, hb map[string]any
	if err := json.Unmarshal(httpapi.OpenAPI(), &oa); err != nil {
		t.Fatalf("openapi.json does not parse: %v", err)
	}
	if err := json.Unmarshal(httpapi.HeartbeatSchema(), &hb); err != nil {
		t.Fatalf("heartbeat.schema.json does not parse: %v", err)
	}
	return oa, &schemaSet{docs: map[string]any{"openapi.json": oa, "heartbeat.schema.json": hb}}
}

// docOp is one operation of the document.
type docOp struct {
	path, method string // "/v1/tickets/{id}", "GET"
	route        string // x-warp-route: the server's pattern
	role         string // x-warp-role
	op           map[string]any
}

var httpMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

func docOps(t testing.TB, oa map[string]any) []docOp {
	t.Helper()
	var out []docOp
	for p, item := range oa["paths"].(map[string]any) {
		for _, m := range httpMethods {
			op, ok := item.(map[string]any)[m].(map[string]any)
			if !ok {
				continue
			}
			route, _ := op["x-warp-route"].(string)
			role, _ := op["x-warp-role"].(string)
			out = append(out, docOp{path: p, method: strings.ToUpper(m), route: route, role: role, op: op})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].route < out[j].route })
	return out
}

// deref follows $ref of an OpenAPI object (a response, a parameter).
func (s *schemaSet) deref(v any) map[string]any {
	for {
		m, _ := v.(map[string]any)
		ref, ok := m["$ref"].(string)
		if !ok {
			return m
		}
		_, v, _ = s.resolve("openapi.json", ref)
	}
}

// responses returns op's responses by status, $refs followed.
func (s *schemaSet) responses(op docOp) map[string]map[string]any {
	out := map[string]map[string]any{}
	for status, r := range op.op["responses"].(map[string]any) {
		out[status] = s.deref(r)
	}
	return out
}

// params returns op's parameters, $refs followed.
func (s *schemaSet) params(op docOp) []map[string]any {
	var out []map[string]any
	list, _ := op.op["parameters"].([]any)
	for _, p := range list {
		out = append(out, s.deref(p))
	}
	return out
}

func errorCodesOf(resp map[string]any) []string {
	var out []string
	list, _ := resp["x-warp-error-codes"].([]any)
	for _, c := range list {
		out = append(out, c.(string))
	}
	return out
}

func TestOpenAPIDocumentIsServed(t *testing.T) {
	oa, s := docSet(t)
	if v, _ := oa["openapi"].(string); !regexp.MustCompile(`^3\.1\.\d+$`).MatchString(v) {
		t.Errorf("openapi %q, want 3.1.x", v)
	}
	for _, name := range []string{"openapi.json", "heartbeat.schema.json"} {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		embedded := map[string][]byte{"openapi.json": httpapi.OpenAPI(), "heartbeat.schema.json": httpapi.HeartbeatSchema()}[name]
		if !bytes.Equal(b, embedded) {
			t.Errorf("the embedded %s is not the checked-in file", name)
		}
	}
	var hb map[string]any
	_ = json.Unmarshal(httpapi.HeartbeatSchema(), &hb)
	if hb["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("heartbeat schema $schema %v, want draft 2020-12", hb["$schema"])
	}
	if ref := oa["components"].(map[string]any)["schemas"].(map[string]any)["HeartbeatRequest"].(map[string]any)["$ref"]; ref != "heartbeat.schema.json" {
		t.Errorf("components.schemas.HeartbeatRequest refers to %v, want heartbeat.schema.json", ref)
	}

	// Every $ref of both documents resolves; every example fits its schema.
	for name, doc := range s.docs {
		walkJSON(doc, "", func(at string, v map[string]any) {
			if ref, ok := v["$ref"].(string); ok {
				if _, _, err := s.resolve(name, ref); err != nil {
					t.Errorf("%s%s: %v", name, at, err)
				}
			}
			sch, hasSchema := v["schema"]
			if exs, ok := v["examples"].(map[string]any); ok && hasSchema { // OpenAPI media type examples
				for exName, ex := range exs {
					var errs []string
					s.check(name, sch, s.deref(ex)["value"], "$", &errs)
					for _, e := range errs {
						t.Errorf("%s%s example %s: %s", name, at, exName, e)
					}
				}
			}
		})
	}
	for i, ex := range hb["examples"].([]any) {
		for _, e := range s.validate("heartbeat.schema.json", ex) {
			t.Errorf("heartbeat.schema.json example %d: %s", i, e)
		}
	}

	// Served as is, without a token, from a server that has tokens.
	e := newEnv(t, withTokens())
	for _, d := range []struct {
		path, contentType string
		body              []byte
	}{
		{"/v1/openapi.json", "application/json", httpapi.OpenAPI()},
		{"/v1/heartbeat.schema.json", "application/schema+json", httpapi.HeartbeatSchema()},
	} {
		r := e.mustStatus(e.request("GET", d.path, "", "", nil), http.StatusOK)
		if ct := r.header.Get("Content-Type"); ct != d.contentType {
			t.Errorf("GET %s: Content-Type %q, want %q", d.path, ct, d.contentType)
		}
		if !bytes.Equal(r.body, d.body) {
			t.Errorf("GET %s: the answer is not the embedded file byte for byte", d.path)
		}
		if r := e.request("HEAD", d.path, "", "", nil); r.status != http.StatusOK || len(r.body) != 0 {
			t.Errorf("HEAD %s: %d with %d bytes", d.path, r.status, len(r.body))
		}
	}
}

// walkJSON calls fn on every object of v, with its JSON pointer.
func walkJSON(v any, at string, fn func(at string, v map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		fn(at, x)
		for k, c := range x {
			walkJSON(c, at+"/"+k, fn)
		}
	case []any:
		for i, c := range x {
			walkJSON(c, at+"/"+strconv.Itoa(i), fn)
		}
	}
}

// docPath is the OpenAPI path of a route pattern: "GET /{$}" is "/", the
// prefix pattern "GET /assets/" is "/assets/{path}".
func docPath(route string) (method, p string) {
	method, p, _ = strings.Cut(route, " ")
	p = strings.TrimSuffix(p, "{$}")
	if strings.HasSuffix(p, "/") && p != "/" {
		p += "{path}"
	}
	return method, p
}

func TestOpenAPIRoutesMatchServer(t *testing.T) {
	oa, _ := docSet(t)
	ops := docOps(t, oa)
	documented := map[string]docOp{}
	for _, op := range ops {
		if op.route == "" {
			t.Errorf("%s %s has no x-warp-route", op.method, op.path)
			continue
		}
		if m, p := docPath(op.route); m != op.method || p != op.path {
			t.Errorf("%s %s: x-warp-route %q is another operation", op.method, op.path, op.route)
		}
		documented[op.route] = op
	}

	registered := registeredRoutes(t)
	for route, where := range registered {
		if _, ok := documented[route]; !ok {
			t.Errorf("%s (registered at %s) is not in openapi.json", route, where)
		}
	}
	for route := range documented {
		if _, ok := registered[route]; !ok {
			t.Errorf("openapi.json documents %s, which no s.handle or Mount call registers", route)
		}
	}
	if len(registered) < 20 {
		t.Errorf("found only %d registered routes: %v; the source scan is broken", len(registered), registered)
	}

	// Each documented operation, requested on a server assembled as warp
	// serve assembles it, reaches its own pattern: not the router's 404 or
	// 405, not another route. The samples are the success requests of the
	// status table.
	f := newDocFixture(t)
	samples := map[string]docCase{}
	for _, c := range docCases() {
		if _, ok := samples[c.route]; !ok && c.status < 400 && c.fault == nil && !c.own {
			samples[c.route] = c
		}
	}
	for _, op := range ops {
		c, ok := samples[op.route]
		if !ok {
			t.Errorf("%s: no success request in the status table", op.route)
			continue
		}
		req := c.req(f)
		f.drainRoutes()
		f.send(req)
		if got := f.routeOf(); got != op.route {
			t.Errorf("%s %s reached route %q, want %q", req.method, req.path, got, op.route)
		}
	}
}

// registeredRoutes parses every non-test Go file of the module and returns
// the patterns of the handle and Mount calls with three arguments (the
// httpapi.Server's) and of the Route literals with a Pattern field (the
// dashboard's routes, which warp serve mounts), each with where it is. A
// pattern must be a constant expression of string literals and string
// constants; the exceptions are the forwarding calls inside
// (*Server).handle and inside the Mount method that mounts Route values.
func registeredRoutes(t *testing.T) map[string]string {
	t.Helper()
	root := filepath.Join("..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root: %v", err)
	}
	fset := token.NewFileSet()
	type file struct {
		pkg string
		f   *ast.File
	}
	var files []file
	consts := map[string]map[string]ast.Expr{} // package name → constant → value
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "vendor" || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		pkg := f.Name.Name
		files = append(files, file{pkg, f})
		if consts[pkg] == nil {
			consts[pkg] = map[string]ast.Expr{}
		}
		for _, decl := range f.Decls {
			if gd, ok := decl.(*ast.GenDecl); ok && gd.Tok == token.CONST {
				for _, spec := range gd.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, name := range vs.Names {
						if i < len(vs.Values) {
							consts[pkg][name.Name] = vs.Values[i]
						}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var eval func(pkg string, imports map[string]string, e ast.Expr) (string, bool)
	eval = func(pkg string, imports map[string]string, e ast.Expr) (string, bool) {
		switch x := e.(type) {
		case *ast.BasicLit:
			if x.Kind == token.STRING {
				s, err := strconv.Unquote(x.Value)
				return s, err == nil
			}
		case *ast.ParenExpr:
			return eval(pkg, imports, x.X)
		case *ast.BinaryExpr:
			if x.Op == token.ADD {
				a, ok1 := eval(pkg, imports, x.X)
				b, ok2 := eval(pkg, imports, x.Y)
				return a + b, ok1 && ok2
			}
		case *ast.Ident:
			if v, ok := consts[pkg][x.Name]; ok {
				return eval(pkg, imports, v)
			}
		case *ast.SelectorExpr:
			if id, ok := x.X.(*ast.Ident); ok {
				if other, ok := imports[id.Name]; ok {
					if v, ok := consts[other][x.Sel.Name]; ok {
						return eval(other, imports, v)
					}
				}
			}
		}
		return "", false
	}
	out := map[string]string{}
	for _, fl := range files {
		imports := map[string]string{}
		for _, im := range fl.f.Imports {
			ip, _ := strconv.Unquote(im.Path.Value)
			name := path.Base(ip)
			if im.Name != nil {
				name = im.Name.Name
			}
			imports[name] = path.Base(ip)
		}
		for _, decl := range fl.f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				if lit, ok := n.(*ast.CompositeLit); ok {
					for _, value := range routePatterns(lit) {
						where := fset.Position(value.Pos()).String()
						pattern, ok := eval(fl.pkg, imports, value)
						if !ok {
							t.Errorf("%s: cannot read the pattern of this Route; keep patterns constant so the OpenAPI test can see them", where)
							continue
						}
						if prev, dup := out[pattern]; dup {
							t.Errorf("route %s registered twice: %s and %s", pattern, prev, where)
						}
						out[pattern] = where
					}
					return true
				}
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) != 3 {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || (sel.Sel.Name != "handle" && sel.Sel.Name != "Mount") {
					return true
				}
				pattern, ok := eval(fl.pkg, imports, call.Args[0])
				where := fset.Position(call.Pos()).String()
				switch {
				case ok:
					if prev, dup := out[pattern]; dup {
						t.Errorf("route %s registered twice: %s and %s", pattern, prev, where)
					}
					out[pattern] = where
				case fl.pkg == "httpapi" && fd.Name.Name == "handle":
					// (*Server).handle forwards its own pattern to Mount.
				case fd.Name.Name == "Mount" && isRoutePattern(call.Args[0]):
					// A Mount method mounting Route values, whose patterns
					// are read from their literals.
				default:
					t.Errorf("%s: cannot read the route pattern of this %s call; keep patterns constant so the OpenAPI test can see them", where, sel.Sel.Name)
				}
				return true
			})
		}
	}
	return out
}

// routePatterns returns the Pattern values of lit when it is a Route
// (Route{...}, pkg.Route{...}) or a slice of them ([]Route{{...}, ...}).
func routePatterns(lit *ast.CompositeLit) []ast.Expr {
	isRoute := func(e ast.Expr) bool {
		switch x := e.(type) {
		case *ast.Ident:
			return x.Name == "Route"
		case *ast.SelectorExpr:
			return x.Sel.Name == "Route"
		}
		return false
	}
	pattern := func(lit *ast.CompositeLit) []ast.Expr {
		var out []ast.Expr
		for _, el := range lit.Elts {
			if kv, ok := el.(*ast.KeyValueExpr); ok {
				if key, ok := kv.Key.(*ast.Ident); ok && key.Name == "Pattern" {
					out = append(out, kv.Value)
				}
			}
		}
		return out
	}
	if isRoute(lit.Type) {
		return pattern(lit)
	}
	var out []ast.Expr
	if at, ok := lit.Type.(*ast.ArrayType); ok && isRoute(at.Elt) {
		for _, el := range lit.Elts {
			if inner, ok := el.(*ast.CompositeLit); ok && inner.Type == nil {
				out = append(out, pattern(inner)...)
			}
		}
	}
	return out
}

// isRoutePattern reports whether e reads the Pattern field of a value
// (r.Pattern).
func isRoutePattern(e ast.Expr) bool {
	sel, ok := e.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "Pattern"
}

// TestOpenAPISchemasMatchWireTypes: each schema has exactly the JSON fields
// of its Go type, and an answer's schema requires exactly the fields Go
// always writes (no omitempty).
func TestOpenAPISchemasMatchWireTypes(t *testing.T) {
	oa, s := docSet(t)
	schemas := oa["components"].(map[string]any)["schemas"].(map[string]any)
	hbDefs := s.docs["heartbeat.schema.json"].(map[string]any)["$defs"].(map[string]any)
	for _, w := range []struct {
		schema map[string]any
		name   string
		v      any
		answer bool
	}{
		{nil, "Ticket", httpapi.Ticket{}, true},
		{nil, "Lease", httpapi.Lease{}, true},
		{nil, "TicketList", httpapi.TicketList{}, true},
		{nil, "CreateTicketRequest", httpapi.CreateTicketRequest{}, false},
		{nil, "ClaimRequest", httpapi.ClaimRequest{}, false},
		{nil, "ClaimNextRequest", httpapi.ClaimNextRequest{}, false},
		{nil, "ReleaseRequest", httpapi.ReleaseRequest{}, false},
		{nil, "CompleteRequest", httpapi.CompleteRequest{}, false},
		{nil, "EditTicketRequest", httpapi.EditTicketRequest{}, false},
		{nil, "TicketChangeRequest", httpapi.TicketChangeRequest{}, false},
		{nil, "HeartbeatResponse", httpapi.HeartbeatResponse{}, true},
		{nil, "HeartbeatProbe", httpapi.HeartbeatProbe{}, true},
		{nil, "Event", httpapi.Event{}, true},
		{nil, "EventList", httpapi.EventList{}, true},
		{nil, "HostAdoption", httpapi.HostAdoption{}, true},
		{nil, "AdoptionSummary", httpapi.AdoptionSummary{}, true},
		{nil, "Adoption", httpapi.Adoption{}, true},
		{nil, "HostAlarm", httpapi.HostAlarm{}, true},
		{nil, "HostHook", httpapi.HostHook{}, true},
		{nil, "Host", httpapi.Host{}, true},
		{nil, "HostList", httpapi.HostList{}, true},
		{nil, "ModeRequest", httpapi.ModeBody{}, false},
		{nil, "ModeAnswer", httpapi.ModeStatus{}, true},
		{nil, "Health", httpapi.Health{}, true},
		{nil, "Error", httpapi.ErrorBody{}, true},
		{nil, "ErrorDetail", httpapi.ErrorDetail{}, true},
		{nil, "StreamMessage", dashboard.Message{}, true},
		{hbDefs["v1"].(map[string]any), "heartbeat.schema.json v1", httpapi.HeartbeatRequest{}, false},
		{hbDefs["v2"].(map[string]any), "heartbeat.schema.json v2", httpapi.HeartbeatRequest{}, false},
	} {
		sch := w.schema
		if sch == nil {
			var ok bool
			if sch, ok = schemas[w.name].(map[string]any); !ok {
				t.Errorf("no schema %s", w.name)
				continue
			}
		}
		fields, always := jsonFields(reflect.TypeOf(w.v))
		props := keysOf(sch["properties"])
		if !reflect.DeepEqual(props, fields) {
			t.Errorf("schema %s has properties %v; %T has %v", w.name, props, w.v, fields)
		}
		if w.answer {
			var required []string
			for _, r := range sch["required"].([]any) {
				required = append(required, r.(string))
			}
			sort.Strings(required)
			if !reflect.DeepEqual(required, always) {
				t.Errorf("schema %s requires %v; %T always writes %v", w.name, required, w.v, always)
			}
		}
	}
}

func keysOf(v any) []string {
	var out []string
	for k := range v.(map[string]any) {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// jsonFields returns the JSON names of t's fields, and those without omitempty.
func jsonFields(t reflect.Type) (all, always []string) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if tag == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		all = append(all, name)
		if !strings.Contains(opts, "omitempty") {
			always = append(always, name)
		}
	}
	sort.Strings(all)
	sort.Strings(always)
	return all, always
}

// TestOpenAPIErrorCodesMatchServer: the ErrorCode enum is every code the
// server answers with: the codes of the error table (internal/httpkit)
// and the listener's own.
func TestOpenAPIErrorCodesMatchServer(t *testing.T) {
	oa, _ := docSet(t)
	var documented []string
	for _, c := range oa["components"].(map[string]any)["schemas"].(map[string]any)["ErrorCode"].(map[string]any)["enum"].([]any) {
		documented = append(documented, c.(string))
	}
	sort.Strings(documented)
	codes, _ := httpkit.Rows()
	codes = append([]string(nil), codes...)
	codes = append(codes, "too_many_connections") // LimitListener's refusal
	sort.Strings(codes)
	if !reflect.DeepEqual(codes, documented) {
		t.Errorf("ErrorCode enum %v; the server answers %v", documented, codes)
	}
}
