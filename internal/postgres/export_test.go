package postgres

// DueLeasesSQL exposes the sweep's query to the plan test.
var DueLeasesSQL = dueLeasesSQL

// VerdictDueSQL exposes the verdict pass's query to the plan test.
var VerdictDueSQL = verdictDueSQL
