package app

// BetweenListAndLock lets a test end a runner where ListAsShown has read
// the index and not yet looked at the locks.
var BetweenListAndLock = &betweenListAndLock
