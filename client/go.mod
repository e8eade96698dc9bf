module github.com/gyrum-labs/warp/client

go 1.18
