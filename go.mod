module github.com/gyrum-labs/warp

go 1.26.8

require (
	github.com/jackc/pgx/v5 v5.13.0
	github.com/prometheus/client_golang v1.25.0
	github.com/spf13/cobra v1.10.2
	golang.org/x/sys v0.50.0
	modernc.org/sqlite v1.62.0
)
