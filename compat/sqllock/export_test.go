package sqllock

// CompanionName is the GET_LOCK name of the MySQL lock name in the
// default table.
func CompanionName(name string) string { return companionName("`"+DefaultTable+"`", name) }
