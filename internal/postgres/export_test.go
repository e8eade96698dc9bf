package postgres

// DueLeasesSQL exposes the sweep's query to the plan test.
var DueLeasesSQL = dueLeasesSQL
