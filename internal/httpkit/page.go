package httpkit

import (
	"net/url"
	"sort"
	"strconv"

	"github.com/gyrum-labs/warp/internal/warp"
)

// Page sizes of the host listings (GET /v1/hosts, /v1/adoption, the
// dashboard's hosts page).
const (
	DefaultPageSize = 500
	MaxPageSize     = 5000
)

// PageParams reads ?limit= (default DefaultPageSize, at most MaxPageSize)
// and ?cursor= (the last key of the previous page) from q.
func PageParams(q url.Values) (limit int, cursor string, err error) {
	limit = DefaultPageSize
	if v := q.Get("limit"); v != "" {
		n, perr := strconv.Atoi(v)
		if perr != nil || n <= 0 || n > MaxPageSize {
			return 0, "", warp.Errorf(warp.ErrInvalid, "limit %q is invalid: want 1 to %d", v, MaxPageSize)
		}
		limit = n
	}
	return limit, q.Get("cursor"), nil
}

// Page returns the items whose key sorts after cursor, at most limit of
// them, and the cursor of the next page ("" after the last). items must be
// sorted by key.
func Page[T any](items []T, key func(T) string, cursor string, limit int) ([]T, string) {
	from := 0
	if cursor != "" {
		from = sort.Search(len(items), func(i int) bool { return key(items[i]) > cursor })
	}
	to := min(from+limit, len(items))
	next := ""
	if to < len(items) {
		next = key(items[to-1])
	}
	return items[from:to], next
}
