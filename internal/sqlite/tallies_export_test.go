package sqlite

// EventTalliesSQL and HostsBySchemaPerHourSQL are the charts' queries, for the plan test.
var (
	EventTalliesSQL         = eventTalliesSQL
	HostsBySchemaPerHourSQL = qHostsBySchemaPerHour
)
