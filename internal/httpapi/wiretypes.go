package httpapi

import "github.com/gyrum-labs/warp/client"

// The wire types are the public client package's (github.com/gyrum-labs/
// warp/client): the server encodes and decodes exactly what clients
// import. These aliases keep the handlers' code short.
type (
	Ticket              = client.Ticket
	Lease               = client.Lease
	LeaseStatus         = client.LeaseStatus
	Attempt             = client.Attempt
	Snapshot            = client.Snapshot
	LoopReport          = client.LoopReport
	TicketList          = client.TicketList
	CreateTicketRequest = client.CreateTicketRequest
	ClaimRequest        = client.ClaimRequest
	ClaimNextRequest    = client.ClaimNextRequest
	ReleaseRequest      = client.ReleaseRequest
	CompleteRequest     = client.CompleteRequest
	EditTicketRequest   = client.EditTicketRequest
	TicketChangeRequest = client.TicketChangeRequest
	HeartbeatRequest    = client.HeartbeatRequest
	HeartbeatResponse   = client.HeartbeatResponse
	HeartbeatProbe      = client.HeartbeatProbe
	Event               = client.Event
	EventList           = client.EventList
	HostAdoption        = client.HostAdoption
	AdoptionSummary     = client.AdoptionSummary
	Adoption            = client.Adoption
	ModeBody            = client.ModeBody
	ModeStatus          = client.ModeStatus
	HostAlarm           = client.HostAlarm
	HostHook            = client.HostHook
	Host                = client.Host
	HostList            = client.HostList
	ModeChange          = client.ModeChange
	ModeHistory         = client.ModeHistory
	Health              = client.Health
)

// Wire constants of the client package.
const (
	HeaderLeaseSecret = client.HeaderLeaseSecret
	LeaseSecretNew    = client.LeaseSecretNew
	HeaderProbe       = client.HeaderProbe
	ProbeValue        = client.ProbeValue
)
