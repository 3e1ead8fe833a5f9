package crabbox

// SetTestHookEntry installs a hook run after each extracted entry (tests).
func SetTestHookEntry(f func(n int)) { testHookEntry = f }
