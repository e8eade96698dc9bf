package httpkit

import "context"

// Operator is who makes a request from the dashboard: the signed-in
// session (or anyone, on a server without tokens), as the API server
// authenticated it. The dashboard reads it to render its action forms and
// to name the operator of what they do.
type Operator struct {
	// Name is the session's name, as the sign-in form gave it ("local"
	// on a server without tokens).
	Name string
	// CSRF is the token every action form sends back in the field
	// CSRFField; the server refuses a form without it.
	CSRF string
	// CanAct: an admin's session (or no tokens). A viewer's session reads
	// only: the pages show no action.
	CanAct bool
}

// CSRFField is the form field that carries Operator.CSRF.
const CSRFField = "csrf"

type operatorKey struct{}

// WithOperator returns ctx carrying o.
func WithOperator(ctx context.Context, o Operator) context.Context {
	return context.WithValue(ctx, operatorKey{}, o)
}

// OperatorFrom returns the operator ctx carries; ok false for a request
// that came with a bearer token (no session, no form to send back).
func OperatorFrom(ctx context.Context) (Operator, bool) {
	o, ok := ctx.Value(operatorKey{}).(Operator)
	return o, ok
}
