// Package storetest is the conformance suite every warp.Store passes
// (internal/sqlite, internal/postgres). Run opens a fresh store per subtest
// and drives it through warp.Service with a fake clock, plus direct Tx
// calls where the contract is about the store itself. It assumes nothing
// about the database behind the store.
package storetest
