package archive

// alive cannot tell on Windows: a lock is never taken as stale there.
func alive(int) bool { return true }
