package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/gyrum-labs/warp/internal/warp"
)

// SQLSTATE codes the store reacts to.
const (
	codeUniqueViolation      = "23505"
	codeForeignKeyViolation  = "23503"
	codeSerializationFailure = "40001"
	codeDeadlockDetected     = "40P01"
	codeAdminShutdown        = "57P01"
	codeCrashShutdown        = "57P02"
	codeCannotConnectNow     = "57P03"
	codeTooManyConnections   = "53300"
	codeReadOnlyTransaction  = "25006" // a write reached a standby (failover)
	codeDivisionByZero       = "22012" // updateLeasesSQL's check
	codeLockNotAvailable     = "55P03" // lock_timeout: a row another transaction holds too long
	codeQueryCanceled        = "57014" // statement_timeout, or a cancelled request
	codeIdleSessionTimeout   = "57P05" // idle_session_timeout ended the session (the sweep lock's hold)
)

// translate maps a pgx error to the domain's sentinels at the boundary:
// no rows → ErrNotFound, unique violation → ErrConflict, a database that
// cannot be reached → ErrUnavailable. The driver error stays in the chain.
func translate(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, warp.ErrNotFound) || errors.Is(err, warp.ErrConflict) || errors.Is(err, warp.ErrUnavailable) {
		return err
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%w: %w", warp.ErrNotFound, err)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == codeUniqueViolation {
		return fmt.Errorf("%w: %w", warp.ErrConflict, err)
	}
	if errors.As(err, &pe) && pe.Code == codeForeignKeyViolation {
		return fmt.Errorf("%w: %w", warp.ErrNotFound, err) // a lease of an unknown ticket
	}
	if isUnavailable(err) {
		return unavailable(err)
	}
	return err
}

// retryable reports a failure PostgreSQL resolves by rolling the
// transaction back: running it again is safe and usually succeeds.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == codeSerializationFailure || pe.Code == codeDeadlockDetected)
}

// timedOut reports a statement that hit lock_timeout or statement_timeout.
func timedOut(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == codeLockNotAvailable || pe.Code == codeQueryCanceled)
}

// isUnavailable reports errors that mean the database cannot be reached or
// is going away, as opposed to errors of the statement.
func isUnavailable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case codeAdminShutdown, codeCrashShutdown, codeCannotConnectNow, codeTooManyConnections, codeReadOnlyTransaction,
			codeLockNotAvailable, codeQueryCanceled:
			return true
		}
		return strings.HasPrefix(pe.Code, "08") // connection exception
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	switch {
	case errors.As(err, &ce), errors.As(err, &ne),
		errors.Is(err, pgconn.ErrConnClosed),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, context.DeadlineExceeded), pgconn.Timeout(err):
		return true
	}
	return false
}

// unavailable wraps err as a domain ErrUnavailable whose message tells the
// caller what happened and that it is transient; the HTTP layer answers 503.
func unavailable(err error) error {
	return &dbError{
		domain: &warp.Error{Kind: warp.ErrUnavailable, Message: "the database (PostgreSQL) is unavailable, nothing was written; retry shortly: " + err.Error()},
		cause:  err,
	}
}

// unavailableAtCommit is unavailable for a commit that got no answer: the
// write may or may not have been applied.
func unavailableAtCommit(err error) error {
	return &dbError{
		domain: &warp.Error{Kind: warp.ErrUnavailable, Message: "the database (PostgreSQL) became unavailable while committing, " +
			"the write may or may not have been applied; retry shortly and check: " + err.Error()},
		cause: err,
	}
}

// dbError is a domain error with the driver error that caused it: errors.Is
// matches the domain sentinel, errors.As the driver's error, and the text
// is the domain message alone (it already quotes the cause).
type dbError struct {
	domain *warp.Error
	cause  error
}

func (e *dbError) Error() string { return e.domain.Message }

// Unwrap returns the domain error and the cause.
func (e *dbError) Unwrap() []error { return []error{e.domain, e.cause} }
