package recovery

// CumulusStatus is the status Cumulus writes for a Step Functions status
// (meta.status: running, completed, failed; "" for another), for a caller
// that reports a message as Cumulus would read it (dla trace).
func CumulusStatus(sfn string) string { return cumulusStatus(sfn) }
