package sqllock

// CompanionName is the GET_LOCK name of the MySQL lock name in the
// default table.
func CompanionName(name string) string { return companionName("`"+DefaultTable+"`", name) }

// HeadName is the GET_LOCK name of the MySQL lock name's queue head in
// the default table.
func HeadName(name string) string { return headName("`"+DefaultTable+"`", name) }
