package httpapi_test

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// schemaSet is a minimal JSON Schema (draft 2020-12) validator for the
// documents of this package: openapi.json (whose schemas are 2020-12 in
// OpenAPI 3.1) and heartbeat.schema.json. No JSON Schema module is in the
// project's dependencies, so it implements the keywords those documents
// use, and refuses any other assertion keyword rather than ignoring it: a
// schema cannot rely on a check this validator would silently skip. It
// also asserts format "date-time" (RFC 3339), which 2020-12 leaves to
// annotation by default.
type schemaSet struct {
	docs map[string]any // by file name: "openapi.json", "heartbeat.schema.json"
}

// annotations are the keywords that assert nothing.
var annotations = map[string]bool{
	"$schema": true, "$id": true, "$comment": true, "$defs": true, "title": true, "description": true,
	"examples": true, "example": true, "default": true, "deprecated": true, "readOnly": true, "writeOnly": true,
	"contentMediaType": true,
}

// validate checks inst against the schema at ref ("openapi.json#/components/schemas/Ticket")
// and returns the failures, none when inst is valid.
func (s *schemaSet) validate(ref string, inst any) []string {
	doc, sch, err := s.resolve("", ref)
	if err != nil {
		return []string{err.Error()}
	}
	var errs []string
	s.check(doc, sch, inst, "$", &errs)
	return errs
}

// resolve returns the document and the schema that ref names, relative to doc.
func (s *schemaSet) resolve(doc, ref string) (string, any, error) {
	file, frag, _ := strings.Cut(ref, "#")
	if file != "" {
		doc = file[strings.LastIndex(file, "/")+1:]
	}
	root, ok := s.docs[doc]
	if !ok {
		return "", nil, fmt.Errorf("$ref %q: no document %q", ref, doc)
	}
	v, err := pointer(root, frag)
	if err != nil {
		return "", nil, fmt.Errorf("$ref %q: %v", ref, err)
	}
	return doc, v, nil
}

// pointer follows a JSON pointer ("/components/schemas/Ticket") in v.
func pointer(v any, ptr string) (any, error) {
	if ptr == "" {
		return v, nil
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, fmt.Errorf("pointer %q does not start with /", ptr)
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := v.(type) {
		case map[string]any:
			next, ok := c[tok]
			if !ok {
				return nil, fmt.Errorf("no %q in %q", tok, ptr)
			}
			v = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, fmt.Errorf("bad index %q in %q", tok, ptr)
			}
			v = c[i]
		default:
			return nil, fmt.Errorf("%q goes through a scalar", ptr)
		}
	}
	return v, nil
}

func (s *schemaSet) valid(doc string, sch, inst any, at string) bool {
	var errs []string
	s.check(doc, sch, inst, at, &errs)
	return len(errs) == 0
}

func (s *schemaSet) check(doc string, sch, inst any, at string, errs *[]string) {
	fail := func(format string, args ...any) {
		*errs = append(*errs, at+": "+fmt.Sprintf(format, args...))
	}
	switch b := sch.(type) {
	case bool:
		if !b {
			fail("no value is allowed here")
		}
		return
	case map[string]any:
	default:
		fail("schema is a %T, not an object or a boolean", sch)
		return
	}
	m := sch.(map[string]any)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		kw := m[k]
		switch {
		case annotations[k] || strings.HasPrefix(k, "x-"):
		case k == "$ref":
			d, target, err := s.resolve(doc, kw.(string))
			if err != nil {
				fail("%v", err)
				continue
			}
			s.check(d, target, inst, at, errs)
		case k == "type":
			if !hasType(kw, inst) {
				fail("want type %v, got %s", kw, jsonType(inst))
			}
		case k == "enum":
			found := false
			for _, e := range kw.([]any) {
				found = found || reflect.DeepEqual(e, inst)
			}
			if !found {
				fail("%s is not one of %v", short(inst), kw)
			}
		case k == "const":
			if !reflect.DeepEqual(kw, inst) {
				fail("%s is not %s", short(inst), short(kw))
			}
		case k == "properties":
			if o, ok := inst.(map[string]any); ok {
				for name, ps := range kw.(map[string]any) {
					if v, ok := o[name]; ok {
						s.check(doc, ps, v, at+"."+name, errs)
					}
				}
			}
		case k == "required":
			if o, ok := inst.(map[string]any); ok {
				for _, name := range kw.([]any) {
					if _, ok := o[name.(string)]; !ok {
						fail("required %q is missing", name)
					}
				}
			}
		case k == "additionalProperties":
			if o, ok := inst.(map[string]any); ok {
				props, _ := m["properties"].(map[string]any)
				for name, v := range o {
					if _, declared := props[name]; declared {
						continue
					}
					if b, ok := kw.(bool); ok && !b {
						fail("undocumented property %q", name)
						continue
					}
					s.check(doc, kw, v, at+"."+name, errs)
				}
			}
		case k == "items":
			if a, ok := inst.([]any); ok {
				for i, v := range a {
					s.check(doc, kw, v, fmt.Sprintf("%s[%d]", at, i), errs)
				}
			}
		case k == "minItems" || k == "maxItems":
			if a, ok := inst.([]any); ok {
				n := int(kw.(float64))
				if (k == "minItems" && len(a) < n) || (k == "maxItems" && len(a) > n) {
					fail("%d items breaks %s %d", len(a), k, n)
				}
			}
		case k == "minimum" || k == "maximum" || k == "exclusiveMinimum" || k == "exclusiveMaximum":
			if x, ok := inst.(float64); ok {
				lim := kw.(float64)
				bad := (k == "minimum" && x < lim) || (k == "maximum" && x > lim) ||
					(k == "exclusiveMinimum" && x <= lim) || (k == "exclusiveMaximum" && x >= lim)
				if bad {
					fail("%v breaks %s %v", x, k, lim)
				}
			}
		case k == "minLength" || k == "maxLength":
			if str, ok := inst.(string); ok {
				n, lim := utf8.RuneCountInString(str), int(kw.(float64))
				if (k == "minLength" && n < lim) || (k == "maxLength" && n > lim) {
					fail("%d characters breaks %s %d", n, k, lim)
				}
			}
		case k == "pattern":
			if str, ok := inst.(string); ok {
				re, err := ecmaRegexp(kw.(string))
				if err != nil {
					fail("pattern %q: %v", kw, err)
				} else if !re.MatchString(str) {
					fail("%s does not match %s", short(inst), kw)
				}
			}
		case k == "format":
			if str, ok := inst.(string); ok && kw == "date-time" {
				if _, err := time.Parse(time.RFC3339Nano, str); err != nil {
					fail("%q is not an RFC 3339 date-time", str)
				}
			}
		case k == "allOf":
			for _, sub := range kw.([]any) {
				s.check(doc, sub, inst, at, errs)
			}
		case k == "anyOf" || k == "oneOf":
			n := 0
			var why []string
			for i, sub := range kw.([]any) {
				var subErrs []string
				s.check(doc, sub, inst, at, &subErrs)
				if len(subErrs) == 0 {
					n++
				} else {
					why = append(why, fmt.Sprintf("%s[%d]: %s", k, i, subErrs[0]))
				}
			}
			switch {
			case n == 0:
				fail("no schema of %s matches (%s)", k, strings.Join(why, "; "))
			case k == "oneOf" && n > 1:
				fail("%d schemas of oneOf match, want exactly 1", n)
			}
		case k == "not":
			if s.valid(doc, kw, inst, at) {
				fail("matches the schema of not")
			}
		default:
			fail("keyword %q is not implemented by this validator", k)
		}
	}
}

func hasType(kw, inst any) bool {
	if list, ok := kw.([]any); ok {
		for _, t := range list {
			if hasType(t, inst) {
				return true
			}
		}
		return false
	}
	want := kw.(string)
	got := jsonType(inst)
	return got == want || (want == "number" && got == "integer")
}

func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	case float64:
		if x == math.Trunc(x) && !math.IsInf(x, 0) {
			return "integer"
		}
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 80 {
		return string(b[:80]) + "..."
	}
	return string(b)
}

var reCache sync.Map // pattern → *regexp.Regexp

// ecmaRegexp compiles a JSON Schema (ECMA-262) pattern with Go's regexp:
// the patterns of these documents only differ in \uXXXX escapes.
func ecmaRegexp(p string) (*regexp.Regexp, error) {
	if re, ok := reCache.Load(p); ok {
		return re.(*regexp.Regexp), nil
	}
	re, err := regexp.Compile(regexp.MustCompile(`\\u([0-9A-Fa-f]{4})`).ReplaceAllString(p, `\x{$1}`))
	if err == nil {
		reCache.Store(p, re)
	}
	return re, err
}
