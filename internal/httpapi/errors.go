package httpapi

import (
	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/httpkit"
)

// Error codes of the wire format: {"error":{"code","message"}}. They are
// the codes of the one error table (internal/httpkit), under the names
// clients of the API match APIError.Code against.
const (
	CodeInvalid            = httpkit.CodeInvalid
	CodeUnsupportedSchema  = httpkit.CodeUnsupportedSchema
	CodeNotFound           = httpkit.CodeNotFound
	CodeNoOpenTicket       = httpkit.CodeNoOpenTicket
	CodeConflict           = httpkit.CodeConflict
	CodeStaleEpoch         = httpkit.CodeStaleEpoch
	CodeNotHolder          = httpkit.CodeNotHolder
	CodeTooManyHosts       = httpkit.CodeTooManyHosts
	CodeLeaseEnded         = httpkit.CodeLeaseEnded
	CodeAdoptionIncomplete = httpkit.CodeAdoptionIncomplete
	CodeUnauthorized       = httpkit.CodeUnauthorized
	CodeForbidden          = httpkit.CodeForbidden
	CodeBodyTooLarge       = httpkit.CodeBodyTooLarge
	CodeMethodNotAllowed   = httpkit.CodeMethodNotAllowed
	CodeUnavailable        = httpkit.CodeUnavailable
	CodeInternal           = httpkit.CodeInternal
)

// The error body and the client's error are the client package's.
type (
	ErrorBody   = client.ErrorBody
	ErrorDetail = client.ErrorDetail
	APIError    = client.APIError
)
